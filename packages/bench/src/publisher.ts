/**
 * The child process of the cross-process latency runs: opens the publisher of the subject named
 * in its arguments, then publishes one job (with its own `sentAt`) each time the parent asks.
 *
 * @module
 */
import { openChildPublisher, wallNow } from "./latency.js";

const [id, url] = process.argv.slice(2) as [string, string];
const publisher = await openChildPublisher(id, url);

process.on("message", (message: { type: string }) => {
  void (async () => {
    if (message.type === "ready?") process.send?.("ready");
    else if (message.type === "publish") {
      await publisher.publish(wallNow());
      process.send?.("published");
    } else if (message.type === "close") {
      await publisher.close();
      process.send?.("closed", () => process.exit(0));
    }
  })();
});
