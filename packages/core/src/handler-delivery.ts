/**
 * The {@link Delivery} a handler receives, as one object of a class: the row's fields are its
 * own, `signal`, `leaseExpiry`, `settle` and `transaction` are read through its prototype, and
 * `settle` and `transaction` are functions made on first read (a handler may take them apart
 * from the delivery: `async ({ payload, settle }) => …`). A literal with getters and arrow
 * functions made every delivery four functions and their scope; most handlers read none of them.
 *
 * @module
 */
import type { Delivery } from "./delivery.js";
import { deliverySignal, type HandlerDeadline } from "./handler-timeout.js";
import type { HeldRow } from "./held-row.js";
import type { Outcome } from "./outcomes.js";
import type { RowId } from "./rows.js";
import type { ClaimFormName, TableDefinition } from "./table.js";
import type { TransactionBody } from "./transactional.js";

/** What a delivery's `settle` and `transaction` do: the subscription's delivery runner, for the delivery's `run`. */
export interface DeliveryActions<R> {
  /** `delivery.settle(outcome)`. */
  settle(run: R, outcome: Outcome): Promise<void>;
  /** `delivery.transaction(body)`. */
  transaction(run: R, body: TransactionBody<never>): Promise<void>;
}

/** One delivery of a held row, as its handler sees it; `R` is the runner's record of the delivery. */
export class HandlerDelivery<P, H, R> implements Delivery<P, H> {
  readonly id: RowId;
  readonly payload: P;
  readonly attempt: number;
  readonly group: string | null;
  readonly headers: H;
  readonly row: Readonly<Record<string, unknown>>;
  readonly table: TableDefinition;
  readonly form: ClaimFormName;
  readonly #hold: HeldRow;
  readonly #deadline: HandlerDeadline | undefined;
  readonly #run: R;
  readonly #actions: DeliveryActions<R>;
  #signal: AbortSignal | undefined;
  #settle: ((outcome: Outcome) => Promise<void>) | undefined;
  #transaction: ((body: TransactionBody) => Promise<void>) | undefined;

  constructor(
    hold: HeldRow,
    payload: P,
    table: TableDefinition,
    deadline: HandlerDeadline | undefined,
    run: R,
    actions: DeliveryActions<R>,
  ) {
    const { row } = hold;
    this.id = row.id;
    this.payload = payload;
    this.attempt = row.attempt;
    this.group = row.group;
    this.headers = row.headers as H;
    this.row = row.row;
    this.table = table;
    this.form = table.form;
    this.#hold = hold;
    this.#deadline = deadline;
    this.#run = run;
    this.#actions = actions;
  }

  get signal(): AbortSignal {
    this.#signal ??= deliverySignal(this.#hold.signal, this.#deadline);
    return this.#signal;
  }

  get leaseExpiry(): Date | undefined {
    return this.#hold.leaseExpiry;
  }

  get settle(): (outcome: Outcome) => Promise<void> {
    this.#settle ??= (outcome) => this.#actions.settle(this.#run, outcome);
    return this.#settle;
  }

  get transaction(): (body: TransactionBody) => Promise<void> {
    this.#transaction ??= (body) => this.#actions.transaction(this.#run, body);
    return this.#transaction;
  }
}
