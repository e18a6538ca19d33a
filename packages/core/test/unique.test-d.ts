import { expectTypeOf, test } from "vitest";
import { type Broker, defineTable, type PublishResult, type RowId } from "../src/index.js";

declare const broker: Broker;
const jobs = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until", key: "job_key" },
});

test("a publish with a key returns a PublishResult; without one, the id", () => {
  expectTypeOf(broker.publish(jobs, 1, { key: "k" })).toEqualTypeOf<Promise<PublishResult>>();
  expectTypeOf(broker.publish(jobs, 1)).toEqualTypeOf<Promise<RowId>>();
  expectTypeOf(broker.publishMany(jobs, [{ payload: 1, key: "k" }])).toEqualTypeOf<
    Promise<readonly PublishResult[]>
  >();
  expectTypeOf(broker.publishMany(jobs, [{ payload: 1 }])).toEqualTypeOf<Promise<readonly RowId[]>>();
});
