// The core README's "Logging" example, run by test/runtime/examples.test.ts.
import { type Broker, createBroker, type Driver } from "@rowclaim/core";
import { pino } from "pino";

/** A broker that logs through pino, writing to `destination`. */
export function pinoBrokerExample(driver: Driver, destination: NodeJS.WritableStream): Broker {
  // #region pino
  const logger = pino({ level: "debug" }, destination); // debug: every claim and settlement
  const broker = createBroker({ driver, logger }); // pino is taken as it is: errors go to `err`
  // #endregion pino
  return broker;
}
