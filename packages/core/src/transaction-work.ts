/**
 * What a transactional delivery's claimer runs inside its transaction: a leaf type, so that the
 * claimer contract (`forms.ts`) does not import the transactional-handler algorithm.
 *
 * @module
 */
import type { Settlement } from "./settlement.js";

/**
 * What a driver's claimer runs inside a handler's transaction: the handler's body with the
 * outcome turned into a settlement. It returns synchronously when the body did (SQLite needs
 * that); it throws (or rejects) when the body did, and the driver then rolls the body's writes
 * back and rethrows the error as it is.
 */
export type TransactionWork = (client: unknown) => Settlement | Promise<Settlement>;
