/**
 * The advisory lock form's candidate window: a claim reads claimable rows in claim order with
 * their keys, and tries at most the first `perKey` rows of each key (the key's limit: one slot a
 * row), since more rows of a key than it has slots cannot be in work at once. The drivers cut
 * their windows here.
 *
 * @module
 */

/**
 * The rows of `rows`, in order, that are among the first `perKey` of their key (`keyOf` reads a
 * row's key), at most `most` of them. `map` turns each kept row into the candidate the claim
 * tries, given the key it read.
 */
export function firstRowsPerKey<R, C>(
  rows: readonly R[],
  perKey: number,
  most: number,
  keyOf: (row: R) => string,
  map: (row: R, key: string) => C,
): C[] {
  const seen = new Map<string, number>();
  const picked: C[] = [];
  for (let index = 0; index < rows.length && picked.length < most; index += 1) {
    const row = rows[index] as R;
    const key = keyOf(row);
    const count = seen.get(key) ?? 0;
    if (count >= perKey) continue;
    seen.set(key, count + 1);
    picked.push(map(row, key));
  }
  return picked;
}

/**
 * How many deliveries of this process hold each key, a count each: a claimer passes over a key
 * whose slots it fills without asking the database.
 */
export class KeyCounts {
  readonly #counts = new Map<string, number>();

  /** How many holds `key` has (0 when none). */
  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /** One more hold of `key`. */
  add(key: string): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** One hold of `key` fewer (a key with none left is forgotten). */
  remove(key: string): void {
    const left = (this.#counts.get(key) ?? 0) - 1;
    if (left > 0) this.#counts.set(key, left);
    else this.#counts.delete(key);
  }

  /** The keys held at least `atLeast` times (1: every key held). */
  keysHeld(atLeast = 1): string[] {
    const keys: string[] = [];
    for (const [key, count] of this.#counts) if (count >= atLeast) keys.push(key);
    return keys;
  }
}
