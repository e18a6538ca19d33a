// A child process that drains the table described in argv[2] (JSON) with the subscription options
// in argv[3] (JSON), acking every delivery: it prints "ran <id>" for each handler call,
// "settle-error <code or errno>" for each failed settlement and "claim-error <code or errno>"
// for each failed claim, until the test kills it.
import { ack, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createDriver } from "./child-driver.mjs";

const table = defineTable(JSON.parse(process.argv[2]));
const options = JSON.parse(process.argv[3] ?? "{}");
const broker = createBroker({ driver: await createDriver(), logger: silentLogger });
const codeOf = (error) => String(error?.code ?? error?.errno ?? error);
broker.on("settleError", ({ error }) => process.stdout.write(`settle-error ${codeOf(error)}\n`));
broker.on("leaseLost", () => process.stdout.write("settle-error LEASE_LOST\n"));
broker.on("claimError", ({ error }) => process.stdout.write(`claim-error ${codeOf(error)}\n`));
await broker.subscribe(
  table,
  (delivery) => {
    process.stdout.write(`ran ${delivery.id}\n`);
    return ack();
  },
  { pollInterval: 50, ...options },
);
process.stdout.write("subscribed\n");
