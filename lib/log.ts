/**
 * The process logger (pino, JSON lines on stdout). One module so every log line has the same shape.
 * A line written while a request runs carries that request's `requestId` (contract section 4), so the id a
 * client got in `X-Request-Id` or in a problem body finds every line of its request.
 */
import pino from "pino";
import { env } from "./env";
import { currentRequestId } from "./http/request-context";

/** Adds the current request's id to a log line (pino calls this for every line). */
function requestIdMixin(): Record<string, unknown> {
  const requestId = currentRequestId();
  return requestId === undefined ? {} : { requestId };
}

let instance: pino.Logger | undefined;

/** The shared logger, created on first use with LOG_LEVEL. */
export function log(): pino.Logger {
  instance ??= pino({
    level: env().LOG_LEVEL,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: requestIdMixin,
  });
  return instance;
}
