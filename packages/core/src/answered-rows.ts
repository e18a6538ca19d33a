/**
 * Which of the rows a claimer sent a statement for the database answered: a coalesced settlement
 * or a lease extension names many rows, each fenced by its own token, and answers with the ids it
 * changed. The drivers match the answer to the rows in one way, written here.
 *
 * Ids compare as the client read them: bytes (a `bytea` or `BINARY` id, read as a `Buffer`) by
 * their bytes, anything else as text. A table's ids are all of one type, so the two never meet.
 *
 * @module
 */

/** How an id compares in an answer: bytes by their hexadecimal text, anything else by `String`. */
export function rowIdKey(id: unknown): string {
  if (id instanceof Uint8Array) {
    let hex = "";
    for (let index = 0; index < id.length; index += 1)
      hex += (id[index] as number).toString(16).padStart(2, "0");
    return hex;
  }
  return typeof id === "string" ? id : String(id);
}

/** An answer row's id: the answer itself, unless the driver says where its id sits. */
export type AnswerId<A> = (answer: A) => unknown;

function itself(answer: unknown): unknown {
  return answer;
}

/** Per row of `held`, `true`: the database answered that every row changed (no ids to match). */
export function allHeld(held: readonly unknown[]): boolean[] {
  return new Array<boolean>(held.length).fill(true);
}

/**
 * Per row of `held`, in order, whether its id is among `answered` (`idOf` reads an answer's id:
 * a result row's id column; by default the answer is the id). A row held twice (under two
 * tokens) reads `true` for both when its id was answered.
 */
export function heldAmong<A>(
  held: readonly { readonly id: unknown }[],
  answered: readonly A[],
  idOf: AnswerId<A> = itself,
): boolean[] {
  const ids = new Set<string>();
  for (let index = 0; index < answered.length; index += 1) ids.add(rowIdKey(idOf(answered[index] as A)));
  return held.map((row) => ids.has(rowIdKey(row.id)));
}

/**
 * Per row of `held`, in order, whether its id is among `answered`, each answered id answering
 * one row: an id held twice, under two tokens, and answered once reads `true` for its first
 * hold only (a statement changes a row once).
 */
export function heldAmongOnce(
  held: readonly { readonly id: unknown }[],
  answered: readonly unknown[],
): boolean[] {
  const counts = new Map<string, number>();
  for (const id of answered) {
    const key = rowIdKey(id);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return held.map(({ id }) => {
    const key = rowIdKey(id);
    const left = counts.get(key) ?? 0;
    if (left === 0) return false;
    counts.set(key, left - 1);
    return true;
  });
}
