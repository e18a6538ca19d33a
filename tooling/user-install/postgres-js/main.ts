// A user's own program around the README's postgres.js example (copied beside it as example.ts).
import { sendEmails } from "./example.js";

const url = process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const sent: string[] = [];
await sendEmails(url, `user_install_js_${process.pid}`, async (to) => {
  sent.push(to);
});
if (sent.join() !== "ada@example.com")
  throw new Error(`expected one email to ada@example.com, sent ${JSON.stringify(sent)}`);
console.log("postgres-js quick start: sent", sent);
