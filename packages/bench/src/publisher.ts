/**
 * The child process of the cross-process latency runs: opens the publisher of the subject named
 * in its arguments, then publishes one job (with its own `sentAt`) each time the parent asks,
 * and says the publish returned when the parent asks that.
 *
 * @module
 */
import { openChildPublisher, wallNow } from "./latency.js";

const [id, url] = process.argv.slice(2) as [string, string];
const publisher = await openChildPublisher(id, url);

// The last publish, answered only when the parent asks (after its handler ran), so that no IPC
// message reaches the measuring process while a job is on its way.
let last: Promise<void> = Promise.resolve();

process.on("message", (message: { type: string }) => {
  void (async () => {
    if (message.type === "ready?") process.send?.("ready");
    else if (message.type === "publish") {
      last = publisher.publish(wallNow());
    } else if (message.type === "published?") {
      await last;
      process.send?.("published");
    } else if (message.type === "close") {
      await publisher.close();
      process.send?.("closed", () => process.exit(0));
    }
  })();
});
