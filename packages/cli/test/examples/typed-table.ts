// The core README's "Typed tables" example, run by test/runtime/examples.test.ts.
import { ack, type Broker, defineTable, type StandardSchemaV1 } from "@rowclaim/core";

/** Publishes one email to a typed table and hands each delivered address to `send`. */
export async function typedTableExample(
  broker: Broker,
  name: string,
  send: (to: string) => Promise<void>,
): Promise<void> {
  // #region typed-table
  interface Email {
    to: string;
    subject: string;
  }
  const emails = defineTable<Email, { tenant: string }, "account">({
    name,
    columns: { id: "id", payload: "payload", headers: "headers", lockedUntil: "locked_until" },
    extraColumns: ["account"],
  });
  await broker.subscribe(emails, async (delivery) => {
    await send(delivery.payload.to); // delivery.payload is an Email, delivery.headers a { tenant }
    return ack();
  });
  await broker.publish(
    emails,
    { to: "ada@example.com", subject: "Hello" },
    { headers: { tenant: "acme" }, values: { account: 7 } },
  );
  // #endregion typed-table
}

/** A Standard Schema written by hand; zod, valibot and arktype schemas have the same `~standard`. */
export const orderSchema: StandardSchemaV1<{ sku: string; quantity: number }> = {
  "~standard": {
    version: 1,
    vendor: "example",
    validate(value) {
      const order = value as { sku?: unknown; quantity?: unknown };
      if (typeof order.quantity !== "number" || order.quantity < 1)
        return { issues: [{ message: "must be at least 1", path: ["quantity"] }] };
      return { value: { sku: String(order.sku), quantity: order.quantity } };
    },
  },
};

/** Publishes a valid order to a table checked by `orderSchema`, then an invalid one; returns the refusal. */
export async function schemaTableExample(broker: Broker, name: string): Promise<unknown> {
  // #region schema-table
  const orders = defineTable({
    name,
    columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
    payloadSchema: orderSchema, // for example z.object({ sku: z.string(), quantity: z.number().min(1) })
  });
  await broker.publish(orders, { sku: "A-1", quantity: 2 });
  try {
    await broker.publish(orders, { sku: "A-1", quantity: 0 });
  } catch (error) {
    // INVALID_ARGUMENT: "… fails the table's payloadSchema: quantity: must be at least 1."
    return error;
  }
  // #endregion schema-table
  return undefined;
}
