/**
 * The process logger (pino, JSON lines on stdout). One module so every log line has the same shape;
 * the request id printed in a 500's body finds its line here.
 */
import pino from "pino";
import { env } from "./env";

let instance: pino.Logger | undefined;

/** The shared logger, created on first use with LOG_LEVEL. */
export function log(): pino.Logger {
  instance ??= pino({ level: env().LOG_LEVEL, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
  return instance;
}
