// Type tests: a transactional body's client takes the type the broker's driver declares in its
// type-only "~transactionClient" property, and `unknown` where the driver declares none.
import { describe, expectTypeOf, test } from "vitest";
import { ack, type Broker, type Driver, defineTable } from "../src/index.js";

interface OwnClient {
  query(sql: string): Promise<unknown>;
}

const jobs = defineTable<{ n: number }>({ name: "jobs", columns: { id: "id", payload: "payload" } });

describe("delivery.transaction's client is typed by the driver", () => {
  test("a driver declaring ~transactionClient types the body's client", () => {
    const broker = {} as Broker<Driver & { readonly "~transactionClient"?: OwnClient }>;
    void broker.subscribe(jobs, (delivery) =>
      delivery.transaction(async (client) => {
        expectTypeOf(client).toEqualTypeOf<OwnClient>();
        expectTypeOf(delivery.payload).toEqualTypeOf<{ n: number }>();
        await client.query("INSERT …");
        return ack();
      }),
    );
  });

  test("a driver declaring nothing hands the body an unknown client", () => {
    const broker = {} as Broker;
    void broker.subscribe(jobs, (delivery) =>
      delivery.transaction((client) => {
        expectTypeOf(client).toBeUnknown();
        return ack();
      }),
    );
  });
});
