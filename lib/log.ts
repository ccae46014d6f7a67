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

/** Receives every line logged at `error` or `fatal`: pino's numeric level (50, 60) and the call's arguments. */
export type ErrorLogObserver = (level: number, args: readonly unknown[]) => void;
const errorLogObservers = new Set<ErrorLogObserver>();

/**
 * Registers `observer` for every line this process logs at `error` or `fatal` (levels 50 and 60), before it is
 * written. The test setup (tests/setup/error-logs.ts) uses it to fail a test that logs an error it did not expect.
 * Returns the function that unregisters it. An observer must not throw or log.
 */
export function observeErrorLogs(observer: ErrorLogObserver): () => void {
  errorLogObservers.add(observer);
  return () => errorLogObservers.delete(observer);
}

/** The shared logger, created on first use with LOG_LEVEL. */
export function log(): pino.Logger {
  instance ??= pino({
    level: env().LOG_LEVEL,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: requestIdMixin,
    hooks: {
      logMethod(args, method, level) {
        if (level >= 50) for (const observer of errorLogObservers) observer(level, args);
        method.apply(this, args);
      },
    },
  });
  return instance;
}
