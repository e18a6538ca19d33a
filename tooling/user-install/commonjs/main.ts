// A CommonJS user's program (package.json "type": "commonjs") around the README's PostgreSQL
// example (copied beside it as example.ts): TypeScript compiles both to require() calls, and Node
// 20.19+ / 22.12+ loads rowclaim's ES modules from require().
import { sendEmails } from "./example";

async function main(): Promise<void> {
  const url = process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const sent: string[] = [];
  await sendEmails(url, `user_install_cjs_${process.pid}`, async (to) => {
    sent.push(to);
  });
  if (sent.join() !== "ada@example.com")
    throw new Error(`expected one email to ada@example.com, sent ${JSON.stringify(sent)}`);
  console.log("CommonJS quick start: sent", sent);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
