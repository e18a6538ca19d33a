/**
 * `rowclaim/bench`: the hand-written loops `rowclaim bench` measures rowclaim against, for the
 * workspace benchmark to run the very same code (so the command line's loop and the workspace's
 * agree by construction), and the command line's flag parser, so the workspace benchmark's flags
 * read, refuse and print `--help` as the command line's do. Not a stable API: it follows the
 * command line.
 *
 * @module
 */

export {
  booleanFlag,
  type CommandSpec,
  type FlagSpec,
  formatCommandHelp,
  integerFlag,
  integerListFlag,
  listFlag,
  type ParsedFlags,
  parseFlags,
  stringFlag,
  UsageError,
} from "../args.js";
export type { Target } from "../target.js";
export {
  asyncNoOpHandler,
  type HandWrittenLoop,
  type LoopHandler,
  type LoopOptions,
  noOpWork,
  openHandWrittenLoop,
} from "./loop.js";
