// Type tests: a table carries its payload, headers and extra column types to publish and
// subscribe. Run by `vitest` in typecheck mode (and by `pnpm typecheck`); an unused
// `@ts-expect-error` or a failed `expectTypeOf` fails the run.
import { pino } from "pino";
import { describe, expectTypeOf, test } from "vitest";
import {
  ack,
  type Broker,
  type BrokerOptions,
  type Delivery,
  defineTable,
  type JsonInput,
  type Logger,
  type StandardSchemaV1,
  type TableDefinition,
} from "../src/index.js";

interface Email {
  readonly to: string;
  readonly cc?: string;
}

const columns = { id: "id", payload: "payload", headers: "headers" } as const;
declare const broker: Broker;

/** A minimal Standard Schema, as zod, valibot or arktype would give, with distinct input and output. */
declare const orderSchema: StandardSchemaV1<{ sku: string; qty: string }, { sku: string; qty: number }>;

describe("a table typed with a type argument", () => {
  const emails = defineTable<Email>({ name: "emails", columns });

  test("publish takes the payload type and refuses anything else", () => {
    void broker.publish(emails, { to: "a@example.com" });
    // @ts-expect-error a property the payload type does not have
    void broker.publish(emails, { wrong: 42 });
    // @ts-expect-error a string is not an Email
    void broker.publish(emails, "a@example.com");
    // @ts-expect-error a function is not an Email
    void broker.publish(emails, () => 1);
  });

  test("the handler receives the payload typed, with no annotation", () => {
    void broker.subscribe(emails, (delivery) => {
      expectTypeOf(delivery.payload).toEqualTypeOf<Email>();
      expectTypeOf(delivery).toEqualTypeOf<Delivery<Email>>();
      return ack();
    });
  });

  test("an explicit payload type that is not the table's is refused", () => {
    // @ts-expect-error the table carries Email, not string
    void broker.subscribe<string>(emails, () => ack());
  });

  test("the handler must return an outcome or nothing", () => {
    // @ts-expect-error a string is not an outcome
    void broker.subscribe(emails, () => "done");
  });
});

describe("extra columns", () => {
  const accounts = defineTable({
    name: "accounts",
    columns,
    extraColumns: ["account"],
    advisoryLock: "accounts-{account}",
  });
  const typed = defineTable<Email, { tenant: string }, "account">({
    name: "typed",
    columns,
    extraColumns: ["account"],
  });

  test("values may name the declared extra columns only", () => {
    void broker.publish(accounts, { n: 1 }, { values: { account: 7 } });
    // @ts-expect-error a typo of the extra column's name
    void broker.publish(accounts, { n: 1 }, { values: { acount: 7 } });
    void broker.publish(typed, { to: "x" }, { values: { account: 7 }, headers: { tenant: "t" } });
    // @ts-expect-error a column the type arguments do not list
    void broker.publish(typed, { to: "x" }, { values: { region: "eu" } });
  });

  test("a table without extra columns takes no values", () => {
    const plain = defineTable({ name: "plain", columns });
    // @ts-expect-error the table lists no extra columns
    void broker.publish(plain, 1, { values: { account: 7 } });
  });

  test("extraColumns must match the type arguments", () => {
    // @ts-expect-error "acount" is not one of the declared extra columns
    defineTable<Email, { tenant: string }, "account">({ name: "t", columns, extraColumns: ["acount"] });
  });

  test("the headers type reaches publish and the handler", () => {
    // @ts-expect-error tenant must be a string
    void broker.publish(typed, { to: "x" }, { headers: { tenant: 1 } });
    void broker.subscribe(typed, (delivery) => {
      expectTypeOf(delivery.headers).toEqualTypeOf<{ tenant: string }>();
    });
  });
});

describe("a table typed by a Standard Schema", () => {
  const orders = defineTable({ name: "orders", columns, payloadSchema: orderSchema });

  test("publish takes the schema's input type", () => {
    void broker.publish(orders, { sku: "a", qty: "2" });
    // @ts-expect-error qty is a string in the schema's input
    void broker.publish(orders, { sku: "a", qty: 2 });
  });

  test("the handler receives the schema's output type", () => {
    void broker.subscribe(orders, (delivery) => {
      expectTypeOf(delivery.payload).toEqualTypeOf<{ sku: string; qty: number }>();
    });
  });
});

describe("an untyped table (existing usage)", () => {
  const jobs = defineTable({ name: "jobs", columns });

  test("publish takes any value, checked at run time (existing code keeps compiling)", () => {
    void broker.publish(jobs, { to: "a" });
    void broker.publish(jobs, "text");
    const email: Email = { to: "a" };
    void broker.publish(jobs, email);
    const parsed: unknown = JSON.parse("1");
    void broker.publishMany(jobs, [{ payload: parsed }]);
  });

  test("a table of plain JSON values refuses a function, undefined and a bigint", () => {
    const json = defineTable<JsonInput>({ name: "json", columns });
    void broker.publish(json, { to: "a" });
    void broker.publish(json, [1, 2]);
    void broker.publish(json, null);
    const email: Email = { to: "a" };
    void broker.publish(json, email);
    // @ts-expect-error a function has no JSON form
    void broker.publish(json, () => 1);
    // @ts-expect-error undefined has no JSON form
    void broker.publish(json, undefined);
    // @ts-expect-error a bigint has no JSON form
    void broker.publish(json, 1n);
  });

  test("the handler's payload is unknown, and an explicit type is still accepted", () => {
    void broker.subscribe(jobs, (delivery) => {
      expectTypeOf(delivery.payload).toEqualTypeOf<unknown>();
    });
    void broker.subscribe<number>(jobs, (delivery) => {
      expectTypeOf(delivery.payload).toEqualTypeOf<number>();
    });
  });

  test("a typed table is still a TableDefinition, for code that takes any table", () => {
    const emails = defineTable<Email>({ name: "emails", columns });
    expectTypeOf(emails).toExtend<TableDefinition>();
    const anyTable: TableDefinition = jobs;
    void broker.subscribe<number>(anyTable, () => ack());
  });

  test("text and bytes tables take strings and bytes", () => {
    const texts = defineTable({ name: "texts", columns, payloadType: "text" });
    const blobs = defineTable({ name: "blobs", columns, payloadType: "bytes" });
    void broker.publish(texts, "hello");
    // @ts-expect-error a text table takes strings
    void broker.publish(texts, { a: 1 });
    void broker.publish(blobs, new Uint8Array([1]));
    // @ts-expect-error a bytes table takes bytes
    void broker.publish(blobs, "x");
    void broker.subscribe(texts, (delivery) => {
      expectTypeOf(delivery.payload).toEqualTypeOf<string>();
    });
  });
});

describe("loggers", () => {
  test("a pino logger is taken by createBroker but is not a message-first Logger", () => {
    const logger = pino();
    expectTypeOf(logger).toExtend<BrokerOptions["logger"]>();
    // @ts-expect-error pino takes its object first: as a rowclaim Logger its errors would be lost
    const wrong: Logger = logger;
    void wrong;
    const plain: Logger = console;
    void plain;
  });

  test("an inline message-first logger keeps its parameter types (existing usage)", () => {
    const options: BrokerOptions = {
      driver: {} as BrokerOptions["driver"],
      logger: {
        warn(message, details) {
          expectTypeOf(message).toEqualTypeOf<string>();
          void details;
        },
        error: (message) => {
          expectTypeOf(message).toEqualTypeOf<string>();
        },
      },
    };
    void options;
  });
});
