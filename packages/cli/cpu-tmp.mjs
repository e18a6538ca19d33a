import { createBroker } from "@rowclaim/core";
import { standardTable } from "./dist/tables.js";
import { openHandWrittenLoop } from "./dist/bench/loop.js";
import { parseTarget } from "./dist/target.js";
import { openDatabaseSession, recreateTables } from "./dist/database-session.js";
import { publishInChunks, accountValues } from "./dist/publish-drain.js";
const url = process.argv[2]; const jobs = Number(process.argv[3] ?? 2000);
const session = await openDatabaseSession(url === "" ? undefined : url, "bench", 12);
const broker = createBroker({ driver: session.driver });
const forms = session.driver.capabilities.forms;
for (const form of ["lease", "rowLock", "advisory"].filter((f) => forms.includes(f))) for (const workers of [1, 8]) {
  const name = `rc_cpu_${form.toLowerCase()}`;
  const table = standardTable({ name, form, key: `${name}:{account}` });
  const loop = await openHandWrittenLoop(session.target, { table, form, connections: 8 });
  const out = [];
  for (const who of ["rowclaim", "loop"]) {
    await recreateTables(session, [name], [table]);
    await publishInChunks(broker, table, jobs, (n) => ({ payload: { n }, ...accountValues(form, `acct-${n % 1000}`) }));
    const c0 = process.cpuUsage(); const t0 = performance.now();
    if (who === "rowclaim") {
      const sub = await broker.subscribe(table, () => undefined, { workers });
      while (sub.stats.acked < jobs) await new Promise((r) => setTimeout(r, 20));
      await sub.stop();
    } else await loop.drain(workers);
    const ms = performance.now() - t0; const c = process.cpuUsage(c0);
    out.push(`${who} ${(jobs * 1000 / ms).toFixed(0)}/s ${((c.user + c.system) / jobs).toFixed(0)}µs CPU/job (${Math.round(100 * (c.user + c.system) / 1000 / ms)}% busy)`);
  }
  await loop.close();
  console.log(`${session.target.dialect} ${form} x${workers}: ${out.join("  |  ")}`);
}
await broker.close(); await session.close();
