// A worker "host" for netns.test.ts, run inside a network namespace (ip netns exec rc-nsN node
// netns-worker.mjs <url> <table-description-json>). It subscribes with the built
// @rowclaim/postgres, announces each claim on stdout as a JSON line, and holds the row until it
// reads "settle" on stdin; then it acks and reports the settlement's outcome (ok, or the error
// code). Before settling it runs "select 1" on its pool's idle connections, so that connections the
// server ended while the host was cut off fail once and are dropped (what any application's
// first query after a network cut meets), and the settlement reaches the row.
import { createInterface } from "node:readline";
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";

const [url, description] = process.argv.slice(2);
const table = defineTable(JSON.parse(description ?? "null"));
const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const errors = [];
const logger = {
  warn() {},
  error(message, details) {
    const code = (details?.err ?? details?.error)?.code;
    errors.push(code);
    say({ event: "error", code: code ?? null, message });
  },
};
const driver = createPostgresDriver({ url, max: 4, applicationName: "rowclaim-netns-worker" });
const broker = createBroker({ driver, logger });
let release;
const settleAsked = new Promise((resolve) => {
  release = resolve;
});
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "settle") release();
});

async function flushDeadConnections(pool) {
  for (let round = 0; round < 20; round += 1) {
    const count = Math.max(1, pool.idleCount);
    const clients = await Promise.all(Array.from({ length: count }, () => pool.connect()));
    let dead = 0;
    await Promise.all(
      clients.map(async (client) => {
        try {
          await client.query("select 1");
          client.release();
        } catch (error) {
          dead += 1;
          client.release(error);
        }
      }),
    );
    if (dead === 0) return;
  }
}

const subscription = await broker.subscribe(
  table,
  async (delivery) => {
    say({ event: "claimed", id: String(delivery.id), attempt: delivery.attempt });
    await settleAsked;
    await flushDeadConnections(driver.pool);
    const before = {
      acked: subscription.stats.acked,
      failed: subscription.stats.settleErrors,
      logged: errors.length,
    };
    let waited = 0;
    const timer = setInterval(() => {
      // A failed settlement is counted, then logged: wait (up to 2 s) for its code.
      const code = errors.slice(before.logged).find((logged) => logged !== undefined);
      if (subscription.stats.settleErrors > before.failed && code === undefined) waited += 20;
      if (subscription.stats.acked > before.acked) say({ event: "settled", outcome: "ok" });
      else if (subscription.stats.settleErrors > before.failed && (code !== undefined || waited > 2000))
        say({ event: "settled", outcome: "error", code: code ?? null });
      else return;
      clearInterval(timer);
    }, 20);
    return ack();
  },
  { pollInterval: 50 },
);
say({ event: "subscribed" });
