/**
 * The storm's bound on its own run. A load or fault test stops by itself: past its bound the storm says which step
 * it was in, prints the end of every service log it wrote (the logs stay in the checkout, which a CI machine
 * throws away), stops what it started and exits 2 ("could not run"). Without it, a storm stuck in one step was
 * only ended by the CI job's own time limit: the job printed no verdict, and nothing said where the storm was.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { runCleanups } from "../lib/processes";

/** Lines printed from the end of each service log when the bound is reached. */
const LOG_TAIL_LINES = 25;
/** Bytes read from the end of a log to find those lines: 64 KiB holds 25 lines of any service's output. */
const LOG_TAIL_BYTES = 64 * 1024;
/**
 * Logs last written this long before the storm started are left out (an earlier run's): 5 s, well past the lag of
 * the kernel's coarse clock that stamps file times (a few ms), under which a log written after the start can carry
 * an earlier time.
 */
const LOG_MTIME_SLACK_MS = 5000;
/** After the bound, the cleanups (stopping the services) get this long before the process exits anyway: 30 s. */
const CLEANUP_GRACE_MS = 30_000;

export interface StormWatchdog {
  /** Names the step the storm is in, for the message printed if the bound is reached. */
  step(name: string): void;
  /** Adds a folder whose `*.log` files (written since the storm started) are printed if the bound is reached. */
  watchLogs(dir: string | null): void;
  /** Disarms the bound (the storm is done). */
  disarm(): void;
}

/**
 * Arms the bound. `boundMs` counts from now; `exitCode` is what the process exits with when the bound is reached
 * (after the registered cleanups, at most {@link CLEANUP_GRACE_MS}). `write` prints one message (stderr).
 */
export function armStormWatchdog(options: {
  boundMs: number;
  exitCode: number;
  write: (message: string) => void;
}): StormWatchdog {
  const startedMs = Date.now();
  let step = "starting";
  const logDirs = new Set<string>();
  const timer = setTimeout(() => {
    const lines = [
      "",
      `storm: still in step "${step}" after ${((Date.now() - startedMs) / 1000).toFixed(1)} s, past its bound of ${(options.boundMs / 1000).toFixed(1)} s: stopping`,
      ...[...logDirs].flatMap((dir) => logTails(dir, startedMs)),
    ];
    options.write(lines.join("\n"));
    const forced = setTimeout(() => process.exit(options.exitCode), CLEANUP_GRACE_MS);
    forced.unref();
    void runCleanups().finally(() => process.exit(options.exitCode));
  }, options.boundMs);
  return {
    step(name) {
      step = name;
    },
    watchLogs(dir) {
      if (dir) logDirs.add(dir);
    },
    disarm() {
      clearTimeout(timer);
    },
  };
}

/** The last {@link LOG_TAIL_LINES} lines of each `*.log` in `dir` modified since `sinceMs`, each under a heading. */
function logTails(dir: string, sinceMs: number): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith(".log"));
  } catch {
    return [`(no logs in ${dir})`];
  }
  const out: string[] = [];
  for (const name of names.sort()) {
    const path = join(dir, name);
    try {
      const stat = statSync(path);
      if (stat.mtimeMs < sinceMs - LOG_MTIME_SLACK_MS) continue;
      const text = readTail(path, stat.size);
      out.push(`--- ${path}, last lines:`, ...text.trimEnd().split("\n").slice(-LOG_TAIL_LINES));
    } catch {
      // A log removed while reading: nothing to show.
    }
  }
  return out;
}

/** The last {@link LOG_TAIL_BYTES} bytes of a file of `size` bytes, as text; the rest is not read. */
function readTail(path: string, size: number): string {
  const length = Math.min(size, LOG_TAIL_BYTES);
  const buffer = Buffer.alloc(length);
  const fd = openSync(path, "r");
  try {
    const read = readSync(fd, buffer, 0, length, size - length);
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
