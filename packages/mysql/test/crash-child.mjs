// A child process that subscribes to the table described in argv[2] (JSON) and holds its first
// delivery forever, printing "in-work <id>" once the handler runs, until the test kills it.
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createDriver } from "./child-driver.mjs";

const table = defineTable(JSON.parse(process.argv[2]));
const broker = createBroker({ driver: await createDriver(), logger: silentLogger });
await broker.subscribe(
  table,
  (delivery) => {
    process.stdout.write(`in-work ${delivery.id}\n`);
    return new Promise(() => {});
  },
  { pollInterval: 50 },
);
process.stdout.write("subscribed\n");
