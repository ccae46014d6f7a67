/**
 * Child services for the scripts that run a local stack (tests, CI, demo): spawn one in its own process group
 * with prefixed logs, stop the whole group (SIGTERM, then SIGKILL after a bound), and make sure nothing started
 * here outlives the script: cleanups run on SIGINT, SIGTERM and SIGHUP, and any group still alive when the
 * process exits is killed synchronously.
 *
 * Why process groups: `next start` and `npm`/`npx` wrappers fork grandchildren (`next-server`); killing only the
 * PID we spawned orphans them (docs/development.md note 8). A detached child leads its own group, so `kill(-pid)`
 * reaches every descendant that did not deliberately leave the group.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, readdirSync, readFileSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";

/**
 * How long a service gets between SIGTERM and SIGKILL. 10 s: Next.js and the sandbox bank close in well under
 * a second; redis-server without persistence exits at once; anything slower than this is stuck.
 */
const DEFAULT_STOP_TIMEOUT_MS = 10_000;

/** Lines of output kept per service for error messages. 200 lines covers a full stack trace plus context. */
const RECENT_LINES_MAX = 200;

export interface ServiceOptions {
  /** Short name used as the log prefix, e.g. "app", "bank", "redis". */
  name: string;
  /** Executable (absolute path or a name on PATH). Spawned directly, never through a shell. */
  command: string;
  args: string[];
  cwd?: string;
  /** The child's whole environment (default: this process's environment). */
  env?: Record<string, string | undefined>;
  /**
   * Where the child's stdout and stderr go, each line prefixed with `[name]`: a file path (appended to, its
   * folder created), "stderr" (this process's stderr), or "silent" (kept only in memory for error messages).
   * Or "inherit": the child writes to this process's stdout and stderr directly, unprefixed (a server's own
   * log lines, e.g. JSON for a log shipper); {@link Service.recentOutput} is then empty. Default "stderr".
   */
  log?: string;
  /** SIGTERM-to-SIGKILL bound for {@link Service.stop}, in ms. Default {@link DEFAULT_STOP_TIMEOUT_MS}. */
  stopTimeoutMs?: number;
}

export interface ServiceExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Service {
  name: string;
  /** PID of the spawned child, which is also the ID of its process group. */
  pid: number;
  child: ChildProcess;
  /** Resolves when the child has exited (never rejects; a spawn error resolves with code null). */
  exited: Promise<ServiceExit>;
  /** Null while the child runs; its exit status afterwards. */
  exitStatus(): ServiceExit | null;
  /** The last lines the child printed (at most 200), for error messages. */
  recentOutput(): string;
  /**
   * Stops the whole process group: SIGTERM, then SIGKILL when it has not exited after `stopTimeoutMs`.
   * Resolves once the child has exited. Safe to call more than once and after the child died on its own.
   */
  stop(): Promise<void>;
}

const liveGroups = new Map<number, string>();
let receivedSignal: NodeJS.Signals | null = null;

/** The signal (SIGINT, SIGTERM, SIGHUP) that started the shutdown, or null while running normally. */
export function shutdownSignal(): NodeJS.Signals | null {
  return receivedSignal;
}

/**
 * Spawns `options.command` as the leader of a new process group, pipes its output (prefixed) to the chosen log,
 * and registers it so it is killed if this process ends first.
 *
 * Returns the {@link Service} handle at once (the child may still be starting; readiness is the caller's
 * business, e.g. `waitForHttp`). Throws synchronously when the executable cannot be spawned at all
 * (ENOENT, EACCES) instead of emitting an unhandled 'error' event.
 */
export function spawnService(options: ServiceOptions): Service {
  const { name } = options;
  const stopTimeoutMs = options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  installSignalHandlers();

  const inherit = options.log === "inherit";
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: (options.env ?? process.env) as NodeJS.ProcessEnv,
    detached: true,
    stdio: ["ignore", inherit ? "inherit" : "pipe", inherit ? "inherit" : "pipe"],
  });

  let exitStatus: ServiceExit | null = null;
  let spawnError: Error | null = null;
  const recent: string[] = [];

  const exited = new Promise<ServiceExit>((resolve) => {
    child.once("error", (error) => {
      spawnError = error;
      exitStatus = { code: null, signal: null };
      resolve(exitStatus);
    });
    child.once("exit", (code, signal) => {
      exitStatus = { code, signal };
      resolve(exitStatus);
    });
  });

  if (child.pid === undefined) {
    // spawn() reports ENOENT/EACCES asynchronously through 'error'; without a PID nothing started.
    // The listener above already swallowed the event, so this cannot crash the process.
    throw new Error(`could not start ${name} (${options.command}): the executable was not found or not executable`);
  }
  const pid = child.pid;
  // The group stays registered until stop() has SIGKILLed it: a grandchild may outlive its leader.
  liveGroups.set(pid, name);
  const sink = inherit ? null : openSink(options.log ?? "stderr");

  const onLine = (stream: string) => (line: string) => {
    recent.push(line);
    if (recent.length > RECENT_LINES_MAX) recent.shift();
    // A pipe can still deliver buffered output after stop() closed a log file: drop it rather than
    // write after end (which would emit an unhandled 'error').
    if (sink && !("writableEnded" in sink && sink.writableEnded && sink !== process.stderr)) {
      sink.write(`[${name}${stream}] ${line}\n`);
    }
  };
  forEachLine(child.stdout, onLine(""));
  forEachLine(child.stderr, onLine(":err"));

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const deadline = Date.now() + stopTimeoutMs;
      // SIGTERM even when the leader already exited: a grandchild (next-server) may still run in the group.
      signalGroup(pid, "SIGTERM");
      const killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), stopTimeoutMs);
      await exited;
      clearTimeout(killTimer);
      // The leader is gone; give the rest of the group the remainder of the bound to finish, then SIGKILL.
      while (Date.now() < deadline && groupHasLiveMembers(pid)) await new Promise((resolve) => setTimeout(resolve, 50));
      signalGroup(pid, "SIGKILL");
      liveGroups.delete(pid);
      await closeSink(sink);
    })();
    return stopping;
  };

  return {
    name,
    pid,
    child,
    exited,
    exitStatus: () => exitStatus,
    recentOutput: () => (spawnError ? `${spawnError.message}\n` : "") + recent.join("\n"),
    stop,
  };
}

export interface ForegroundOptions {
  /** Name used in messages. */
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  /** The child's whole environment (default: this process's environment). */
  env?: Record<string, string | undefined>;
  /**
   * Upper bound on the run, in ms (default: none). Past it the child's group gets SIGTERM, then SIGKILL
   * {@link FOREGROUND_KILL_AFTER_MS} later, and the status says `timedOut`: a hung suite fails alone, named, instead
   * of eating the whole CI job's time with no summary.
   */
  timeoutMs?: number;
}

/** Exit status of {@link runForeground}: `timedOut` when its `timeoutMs` ran out and it was stopped. */
export interface ForegroundExit extends ServiceExit {
  timedOut: boolean;
}

/** SIGTERM-to-SIGKILL bound for a foreground run past its `timeoutMs`: 30 s to stop its own services and report. */
const FOREGROUND_KILL_AFTER_MS = 30_000;

/**
 * Runs a command to completion with this process's stdout and stderr (colours and progress intact) and no
 * stdin, as the leader of its own process group, so that a signal to this script stops the whole tree (the
 * exit hook kills the group) instead of leaving a test runner's workers behind.
 *
 * Resolves with the exit status (code null and the signal when it was killed; code null and signal null when it
 * could not be spawned, after printing why). Never rejects.
 */
export function runForeground(options: ForegroundOptions): Promise<ForegroundExit> {
  installSignalHandlers();
  return new Promise((resolve) => {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: (options.env ?? process.env) as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
    });
    const pid = child.pid;
    if (pid !== undefined) liveGroups.set(pid, options.name);
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const bound =
      options.timeoutMs === undefined || pid === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            process.stderr.write(
              `\n${options.name} still running after ${Math.round(options.timeoutMs! / 1000)} s, its bound: stopping it\n`,
            );
            signalGroup(pid, "SIGTERM");
            killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), FOREGROUND_KILL_AFTER_MS);
          }, options.timeoutMs);
    const finish = (status: ServiceExit) => {
      clearTimeout(bound);
      clearTimeout(killTimer);
      if (pid !== undefined) {
        // Workers that outlived their runner (they should not) go with it.
        signalGroup(pid, "SIGKILL");
        liveGroups.delete(pid);
      }
      resolve({ ...status, timedOut });
    };
    child.once("error", (error) => {
      process.stderr.write(`could not run ${options.name} (${options.command}): ${error.message}\n`);
      finish({ code: null, signal: null });
    });
    child.once("exit", (code, signal) => finish({ code, signal }));
  });
}

/**
 * Sends `signal` to every process in group `pgid` (0 only checks that the group exists). Returns false when
 * the group no longer exists (ESRCH), true otherwise. Never throws for a vanished group.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

interface ProcStat {
  pid: number;
  state: string;
  pgrp: number;
  /** Start time in clock ticks after boot: with the PID, it identifies a process across PID reuse. */
  startTicks: number;
}

/** Parses /proc/<pid>/stat (Linux); null when the process is gone. */
function readProcStat(pid: number | string): ProcStat | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // Format: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice threads itrealvalue starttime ...; comm may contain spaces and parentheses,
  // so the fields are counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pid: Number(pid), state: fields[0] ?? "", pgrp: Number(fields[2]), startTicks: Number(fields[19]) };
}

/**
 * Whether process `pid` is running (not a zombie) and, when `startTicks` is given, is the very process that was
 * recorded (its start time matches, so a PID reused by another program does not count). On Linux this reads
 * /proc (docs/development.md note 30: `kill -0` reports a dead, unreaped process as alive); elsewhere it is `kill(pid,
 * 0)`.
 */
export function isProcessRunning(pid: number, startTicks: number | null = null): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (process.platform !== "linux") {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }
  const stat = readProcStat(pid);
  if (!stat || stat.state === "Z") return false;
  return startTicks === null || stat.startTicks === startTicks;
}

/** Running (non-zombie) processes whose process group is `pgid` (Linux, from /proc). */
function groupMembers(pgid: number): ProcStat[] {
  const members: ProcStat[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcStat(entry);
    if (stat && stat.pgrp === pgid && stat.state !== "Z") members.push(stat);
  }
  return members;
}

/**
 * Whether any process of group `pgid` is still running. On Linux, reads /proc so that zombies (exited, not
 * yet reaped: a container without an init process leaves them) do not count; elsewhere, `kill(-pgid, 0)`.
 */
function groupHasLiveMembers(pgid: number): boolean {
  if (process.platform !== "linux") return signalGroup(pgid, 0);
  return groupMembers(pgid).length > 0;
}

/** Enough to find a process group again after this process died: its ID and its leader's start time. */
export interface GroupRecord {
  pgid: number;
  startTicks: number;
}

/**
 * Describes the group led by `pid` so that {@link killRecordedGroup} can find it later, from another process,
 * without hitting an unrelated process that reused the PID. Null when not on Linux or the process is gone.
 */
export function recordGroup(pid: number): GroupRecord | null {
  if (process.platform !== "linux") return null;
  const stat = readProcStat(pid);
  return stat ? { pgid: pid, startTicks: stat.startTicks } : null;
}

/**
 * SIGKILLs what is left of a recorded group (for cleaning up after a run that was SIGKILLed and could not stop
 * its services): every running member of group `pgid` that started no earlier than the recorded leader.
 * Returns how many processes were signalled.
 */
export function killRecordedGroup(record: GroupRecord): number {
  if (process.platform !== "linux") return 0;
  let killed = 0;
  for (const member of groupMembers(record.pgid)) {
    if (member.startTicks < record.startTicks) continue; // Older than our leader: not ours (PID reuse).
    try {
      process.kill(member.pid, "SIGKILL");
      killed++;
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}

type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];
let handlersInstalled = false;
let cleaningUp: Promise<void> | null = null;
let cleanupFailed = false;
let exitZeroAfterSignal = false;

/**
 * Makes a SIGINT, SIGTERM or SIGHUP end the process with exit code 0 once every cleanup has succeeded (instead
 * of 128 + signal). For a server that was asked to stop and stopped cleanly (`npm start`): systemd counts exit 0
 * as a clean stop and 143 as a failure. A failed cleanup, or cleanups cut short by the time bound, still exit
 * with 128 + signal.
 */
export function exitZeroAfterCleanShutdown(): void {
  exitZeroAfterSignal = true;
}

/**
 * Registers `cleanup` to run (last registered, first run) on SIGINT, SIGTERM or SIGHUP, or when the script calls
 * {@link runCleanups}. Returns a function that unregisters it (call it after a normal, explicit stop).
 */
export function registerCleanup(cleanup: Cleanup): () => void {
  installSignalHandlers();
  cleanups.push(cleanup);
  return () => {
    const index = cleanups.indexOf(cleanup);
    if (index >= 0) cleanups.splice(index, 1);
  };
}

/**
 * Runs every registered cleanup once, newest first, each awaited; errors are printed, not thrown, so one failed
 * cleanup does not keep the others from running. Calling it again returns the same promise.
 */
export function runCleanups(): Promise<void> {
  cleaningUp ??= (async () => {
    while (cleanups.length > 0) {
      const cleanup = cleanups.pop()!;
      try {
        await cleanup();
      } catch (error) {
        cleanupFailed = true;
        process.stderr.write(`cleanup failed: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
  })();
  return cleaningUp;
}

/**
 * Upper bound for the cleanups after a signal. 20 s: two services at the 10 s SIGKILL bound each would fit,
 * in practice they take well under a second; past it the process exits and the exit hook SIGKILLs the rest.
 */
const SIGNAL_CLEANUP_MS_MAX = 20_000;

/**
 * Installs, once, the SIGINT/SIGTERM/SIGHUP handlers (SIGTERM every child group, run the registered cleanups,
 * exit with 128 + signal) and the 'exit' hook that SIGKILLs child groups still alive. Called by everything in
 * this module that starts a process; exported for modules whose own 'exit' hooks must run on a signal too
 * (Node's default for these signals ends the process without emitting 'exit').
 */
export function installSignalHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const onSignal = (signal: NodeJS.Signals, exitCode: number) => {
    if (receivedSignal) return; // A second Ctrl-C while stopping: the first shutdown is already under way.
    receivedSignal = signal;
    process.stderr.write(`\nreceived ${signal}: stopping services\n`);
    // Every child group hears the signal at once (a runner in its own group did not get the terminal's
    // Ctrl-C); the cleanups then stop the services in order, and the exit hook SIGKILLs what is left.
    for (const pgid of liveGroups.keys()) signalGroup(pgid, "SIGTERM");
    const forced = setTimeout(() => process.exit(exitCode), SIGNAL_CLEANUP_MS_MAX);
    forced.unref();
    void runCleanups().finally(() => process.exit(exitZeroAfterSignal && !cleanupFailed ? 0 : exitCode));
  };
  // Exit codes 128 + signal number, as a shell reports a process killed by that signal.
  process.on("SIGINT", () => onSignal("SIGINT", 130));
  process.on("SIGTERM", () => onSignal("SIGTERM", 143));
  process.on("SIGHUP", () => onSignal("SIGHUP", 129));
  // Last resort, synchronous: whatever is still running when this process exits is killed with its group.
  process.on("exit", () => {
    for (const pgid of liveGroups.keys()) {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    liveGroups.clear();
  });
}

function openSink(log: string): WriteStream | NodeJS.WriteStream | null {
  if (log === "silent") return null;
  if (log === "stderr") return process.stderr;
  mkdirSync(dirname(log), { recursive: true });
  const file = createWriteStream(log, { flags: "a" });
  // A full disk or a deleted folder must not crash the script that runs the stack.
  file.on("error", (error) => process.stderr.write(`log file ${log}: ${error.message}\n`));
  return file;
}

function closeSink(sink: WriteStream | NodeJS.WriteStream | null): Promise<void> {
  if (sink === null || sink === process.stderr || !("close" in sink)) return Promise.resolve();
  const file = sink as WriteStream;
  return new Promise((resolve) => file.end(() => resolve()));
}

function forEachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    pending += chunk;
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      onLine(pending.slice(0, newline).replace(/\r$/, ""));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
  });
  stream.on("end", () => {
    if (pending.length > 0) onLine(pending);
    pending = "";
  });
}
