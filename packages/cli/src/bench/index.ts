/**
 * `rowclaim/bench`: the hand-written loops `rowclaim bench` measures rowclaim against, for the
 * workspace benchmark to run the very same code (so the command line's loop and the workspace's
 * agree by construction). Not a stable API: it follows the command line's bench.
 *
 * @module
 */

export type { Target } from "../target.js";
export {
  asyncNoOpHandler,
  type HandWrittenLoop,
  type LoopHandler,
  type LoopOptions,
  noOpWork,
  openHandWrittenLoop,
} from "./loop.js";
