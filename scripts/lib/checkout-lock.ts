/**
 * One local stack per checkout: `npm run demo` and `npm run dev` share the embedded PostgreSQL data folder, the
 * ports and `.data/runtime.json`, so a second one started beside the first would stop the first one's PostgreSQL
 * (it looks orphaned, docs/development.md note 19), fail on its ports and overwrite its runtime file. Each takes
 * `.data/stack.lock` first and refuses to start while a live process holds it.
 *
 * The lock is a file created with O_EXCL holding `{ command, pid, startTicks, startedAt }`. A lock whose process is
 * gone (or whose PID now belongs to another program: the start time differs) is stale and taken over, so a demo
 * killed with SIGKILL does not block the next start.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { isProcessRunning, recordGroup } from "./processes";

/** Who holds the lock, as written in the file. */
export interface CheckoutLockOwner {
  /** The npm script that took it: "demo" or "dev". */
  command: string;
  pid: number;
  /** Start time of `pid` in clock ticks after boot (Linux), null elsewhere. */
  startTicks: number | null;
  /** ISO-8601 UTC. */
  startedAt: string;
}

/** Thrown by {@link acquireCheckoutLock} when a live process holds the lock. */
export class CheckoutBusyError extends Error {
  constructor(readonly owner: CheckoutLockOwner) {
    super(
      `npm run ${owner.command} (pid ${owner.pid}, started ${owner.startedAt}) is already running in this checkout: ` +
        `stop it first (Ctrl-C in its terminal, or kill ${owner.pid}). One demo or dev server per checkout: they share ` +
        "the database, the ports and .data/runtime.json.",
    );
    this.name = "CheckoutBusyError";
  }
}

/** Absolute path of the lock file of the checkout at `root`: `<root>/.data/stack.lock`. */
export function checkoutLockPath(root: string): string {
  return join(root, ".data", "stack.lock");
}

/**
 * Takes the checkout's lock for `command` ("demo" or "dev") in the project at `root`.
 *
 * Returns `release`, which deletes the file if this process still holds it (safe to call twice; also run
 * synchronously at process exit). Throws {@link CheckoutBusyError} naming the holder when a live process holds
 * it; a stale lock (holder gone, or its PID reused) is replaced. Throws on file-system errors other than "the
 * file exists".
 */
export function acquireCheckoutLock(command: string, root: string): () => void {
  const path = checkoutLockPath(root);
  mkdirSync(dirname(path), { recursive: true });
  const mine: CheckoutLockOwner = {
    command,
    pid: process.pid,
    startTicks: recordGroup(process.pid)?.startTicks ?? null,
    startedAt: new Date().toISOString(),
  };
  // Two attempts: the second follows the removal of a stale lock. Should another process take the lock in
  // between, the second O_EXCL create fails and that process is reported as the holder.
  for (let attempt = 1; ; attempt++) {
    try {
      writeFileSync(path, `${JSON.stringify(mine)}\n`, { flag: "wx", mode: 0o644 });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readOwner(path);
    if (holder && isProcessRunning(holder.pid, holder.startTicks)) throw new CheckoutBusyError(holder);
    // An unreadable lock this young is most likely being written by a start that is racing this one.
    if (!holder && ageMs(path) < UNREADABLE_LOCK_AGE_MS_MIN) {
      throw new Error(`${path} is being taken by another start at this moment: try again in a few seconds`);
    }
    if (attempt >= 2) throw new Error(`could not take ${path}: it keeps reappearing; is another start racing?`);
    rmSync(path, { force: true });
  }

  const release = () => {
    process.off("exit", release);
    const holder = readOwner(path);
    if (holder?.pid === mine.pid && holder.startedAt === mine.startedAt) rmSync(path, { force: true });
  };
  process.on("exit", release);
  return release;
}

/**
 * How old an unreadable (empty, half-written) lock file must be before it counts as stale. 5 s: writing the
 * few bytes of a lock takes microseconds, so a file still unreadable after that was left by a crash.
 */
const UNREADABLE_LOCK_AGE_MS_MIN = 5_000;

/** Milliseconds since `path` was last modified; Infinity when it is gone. */
function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** The lock's content, or null when the file is missing or not a lock this module wrote (treated as stale). */
function readOwner(path: string): CheckoutLockOwner | null {
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Partial<CheckoutLockOwner>;
    if (typeof value.pid !== "number" || typeof value.command !== "string") return null;
    return {
      command: value.command,
      pid: value.pid,
      startTicks: typeof value.startTicks === "number" ? value.startTicks : null,
      startedAt: typeof value.startedAt === "string" ? value.startedAt : "at an unknown time",
    };
  } catch {
    return null;
  }
}
