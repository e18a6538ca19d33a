#!/usr/bin/env node
/**
 * The `rowclaim` executable.
 *
 * @module
 */
import { main } from "./main.js";

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
// A driver whose pool failed to close must not keep the process alive after the command ended.
process.exitCode = code;
setTimeout(() => process.exit(code), 200).unref();
