/**
 * Where the CPU goes during a measurement: CPU time of the app (its process group), PostgreSQL (the postmaster
 * listening on the stack's port and all its children), the sandbox bank, pgbench, and this process (the load
 * generator or the in-process ledger loop), read from Linux's /proc before and after. On a 2-core machine the
 * components share the same cores, so "CPU ms per request" of each one shows what bounds a throughput and what a
 * ratio between two routes is made of. This is the benchmark's profile: measured, not guessed.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`; 100 on every Linux this runs on). */
function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    return Number.isInteger(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}
const TICKS_PER_S = clockTicksPerSecond();

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  /** utime + stime + cutime + cstime, in ticks: the process and its reaped children. */
  cpuTicks: number;
}

function readProc(pid: number): ProcInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
    return { pid, ppid: Number(fields[1]), pgrp: Number(fields[2]), cpuTicks: ticks };
  } catch {
    return null;
  }
}

function allProcs(): ProcInfo[] {
  const procs: ProcInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const info = readProc(Number(name));
    if (info) procs.push(info);
  }
  return procs;
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The processes a snapshot adds up, found once (their PIDs do not change during a run). */
export interface CpuTargets {
  /** Process group of the `next-server` whose environment has `PORT=<appPort>`; null when not found. */
  readonly appGroup: number | null;
  /** The postmaster whose command line has `-p <pgPort>`; its children are added at each snapshot. */
  readonly postmaster: number | null;
  /** Process group of the bank whose environment has `BANK_PORT=<bankPort>`. */
  readonly bankGroup: number | null;
}

/** Finds the app, PostgreSQL and bank processes of a stack by their ports. Missing ones are null. */
export function findCpuTargets(ports: { app: number | null; postgres: number; bank: number | null }): CpuTargets {
  let appGroup: number | null = null;
  let postmaster: number | null = null;
  let bankGroup: number | null = null;
  for (const proc of allProcs()) {
    const cmdline = readText(`/proc/${proc.pid}/cmdline`).split("\0");
    if (postmaster === null && cmdline[0]?.endsWith("/postgres")) {
      const portIndex = cmdline.indexOf("-p");
      if (portIndex >= 0 && cmdline[portIndex + 1] === String(ports.postgres)) postmaster = proc.pid;
    }
    if (
      appGroup === null &&
      ports.app !== null &&
      (cmdline[0]?.startsWith("next-server") || cmdline.some((arg) => arg.endsWith("next/dist/bin/next")))
    ) {
      if (readText(`/proc/${proc.pid}/environ`).split("\0").includes(`PORT=${ports.app}`)) appGroup = proc.pgrp;
    }
    if (bankGroup === null && ports.bank !== null && cmdline.includes("bank/main.ts")) {
      if (readText(`/proc/${proc.pid}/environ`).split("\0").includes(`BANK_PORT=${ports.bank}`)) bankGroup = proc.pgrp;
    }
  }
  return { appGroup, postmaster, bankGroup };
}

/** CPU milliseconds used so far by each component. */
export interface CpuSnapshot {
  readonly atMs: number;
  readonly app: number;
  readonly postgres: number;
  readonly bank: number;
  /** This Node process (the load generator, or the in-process ledger loop). */
  readonly self: number;
  /** Processes started by this process other than the services above (pgbench). */
  readonly children: number;
}

/**
 * Reads the CPU time of every component now. PostgreSQL's backends that exited since the last snapshot are
 * counted through the postmaster's `cutime`/`cstime` (children's time is added to the parent when reaped).
 */
export function cpuSnapshot(targets: CpuTargets): CpuSnapshot {
  const procs = allProcs();
  const sum = (filter: (proc: ProcInfo) => boolean) =>
    procs.filter(filter).reduce((total, proc) => total + proc.cpuTicks, 0);
  const toMs = (ticks: number) => (ticks * 1000) / TICKS_PER_S;
  const own = process.cpuUsage();
  const self = readProc(process.pid);
  return {
    atMs: performance.now(),
    app: targets.appGroup === null ? 0 : toMs(sum((proc) => proc.pgrp === targets.appGroup)),
    postgres:
      targets.postmaster === null
        ? 0
        : toMs(sum((proc) => proc.pid === targets.postmaster || proc.ppid === targets.postmaster)),
    bank: targets.bankGroup === null ? 0 : toMs(sum((proc) => proc.pgrp === targets.bankGroup)),
    self: (own.user + own.system) / 1000,
    // cutime + cstime of this process: children it started and reaped (pgbench runs), minus nothing else.
    children: self ? toMs(self.cpuTicks) - (own.user + own.system) / 1000 : 0,
  };
}

/** CPU used between two snapshots, per component, in ms, and the wall time. */
export interface CpuUse {
  readonly wallMs: number;
  readonly app: number;
  readonly postgres: number;
  readonly bank: number;
  readonly self: number;
  readonly children: number;
  /** Sum of the components divided by the wall time: how many cores were busy on average. */
  readonly coresBusy: number;
}

/** The CPU used between `before` and `after`. */
export function cpuUse(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const wallMs = after.atMs - before.atMs;
  const use = {
    app: after.app - before.app,
    postgres: after.postgres - before.postgres,
    bank: after.bank - before.bank,
    self: after.self - before.self,
    children: Math.max(0, after.children - before.children),
  };
  const total = use.app + use.postgres + use.bank + use.self + use.children;
  return { wallMs, ...use, coresBusy: wallMs > 0 ? total / wallMs : 0 };
}
