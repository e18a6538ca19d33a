// A user's own program around the README's MySQL/MariaDB example (copied beside it as example.ts).
import { createPool } from "mysql2/promise";
import { readmeExample } from "./example.js";

const url = process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";
const table = `user_install_${process.pid}`;
try {
  const sent = await readmeExample(url, table);
  if (JSON.stringify(sent) !== JSON.stringify([{ to: "a@example.com" }])) {
    throw new Error(`expected one job for a@example.com, handled ${JSON.stringify(sent)}`);
  }
  console.log("mysql quick start: handled", sent);
} finally {
  const pool = createPool(url);
  await pool.query(`DROP TABLE IF EXISTS \`${table}\``);
  await pool.end();
}
