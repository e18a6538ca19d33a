/**
 * What each demo job does when handled: how many deliveries fail before it succeeds, or whether
 * it always fails (and so reaches `maxAttempts` and the dead-letter group). Decided by the job's
 * number through a fixed hash, so a run of N jobs always has the same failures and the summary's
 * counts can be checked.
 *
 * @module
 */

/** The demo's attempt cap: a job whose third delivery fails moves to the dead letter. */
export const DEMO_MAX_ATTEMPTS = 3;

/** The dead-letter group of the demo's tables. */
export const DEMO_DEAD_LETTER_GROUP = "dead";

/** One demo job's plan, carried in its payload. */
export interface JobPlan {
  /** The job's number, 0-based. */
  readonly n: number;
  /** The account it belongs to (the advisory table's key column): jobs of one account run one at a time. */
  readonly account: string;
  /** How many deliveries fail before one succeeds (0, 1 or 2). */
  readonly failures: number;
  /** Whether every delivery fails, so the job ends in the dead-letter group. */
  readonly poison: boolean;
}

/** How many accounts the demo's jobs spread over. */
export const DEMO_ACCOUNTS = 40;

/** A number in [0, 1) fixed for `n` (a 32-bit integer hash). */
function unitHash(n: number): number {
  let x = (n + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  x ^= x >>> 16;
  return (x >>> 0) / 4294967296;
}

/**
 * The plan of job `n`: one job in a hundred is poison (`n % 100 === 37`: always fails, so it is
 * dead-lettered at attempt 3); of the others about 8 % fail once and 3 % fail twice; the rest
 * succeed at once.
 */
export function planJob(n: number): JobPlan {
  const u = unitHash(n);
  const poison = n % 100 === 37;
  const failures = poison ? 0 : u < 0.08 ? 1 : u < 0.11 ? 2 : 0;
  return { n, account: `acct-${n % DEMO_ACCOUNTS}`, failures, poison };
}

/** What a run of `jobs` jobs should end with, per table. */
export interface ExpectedCounts {
  /** Jobs that end acked. */
  readonly handled: number;
  /** Jobs that end in the dead-letter group. */
  readonly deadLettered: number;
  /** Deliveries that fail and are retried (a dead job is retried `DEMO_MAX_ATTEMPTS − 1` times). */
  readonly retried: number;
}

/** The counts a demo run of `jobs` jobs ends with in each table, computed from the plans. */
export function expectedCounts(jobs: number): ExpectedCounts {
  let handled = 0;
  let deadLettered = 0;
  let retried = 0;
  for (let n = 0; n < jobs; n += 1) {
    const plan = planJob(n);
    if (plan.poison) {
      deadLettered += 1;
      retried += DEMO_MAX_ATTEMPTS - 1;
    } else {
      handled += 1;
      retried += plan.failures;
    }
  }
  return { handled, deadLettered, retried };
}

/** Whether delivery `attempt` (1-based) of a job with this plan fails. */
export function deliveryFails(plan: JobPlan, attempt: number): boolean {
  return plan.poison || attempt <= plan.failures;
}
