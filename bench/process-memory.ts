/**
 * Peak memory of the app under load, read from Linux's /proc: `VmHWM` is a process's
 * peak resident set size since it started, so reading it once after the load gives the peak without sampling.
 * `next start` serves in its own process and renames it (`process.title`, so /proc/<pid>/cmdline reads
 * "next-server (v16.x)" and no longer shows the port); the app is therefore found by the `PORT=<port>` its launcher
 * put in its environment, and every member of its process group is read (a worker it may fork included).
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessMemory {
  readonly pid: number;
  /** The command line, at most 40 characters, e.g. "next-server (v16.4.6)". */
  readonly name: string;
  /** Peak resident set size, MiB. */
  readonly peakRssMiB: number;
  /** Resident set size now, MiB. */
  readonly rssMiB: number;
}

function readStatusKiB(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
  return match ? Number(match[1]) : 0;
}

/** The process group id of `pid` (field 5 of /proc/<pid>/stat, after the parenthesised command name). */
function processGroup(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[2]);
  } catch {
    return null;
  }
}

function numericDirs(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/**
 * Finds the app serving `port` (a process named `next-server` or running Next's bin, with `PORT=<port>` in its
 * environment) and returns the memory of every process in its group. Returns an empty list when none is found
 * (not Linux, or the app is not running).
 */
export function appGroupMemory(port: number): ProcessMemory[] {
  let server: number | null = null;
  for (const pid of numericDirs()) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!cmdline.startsWith("next-server") && !cmdline.includes("next/dist/bin/next")) continue;
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (environment.includes(`PORT=${port}`)) {
        server = pid;
        break;
      }
    } catch {
      // The process exited while we looked, or is not ours to read.
    }
  }
  if (server === null) return [];
  const group = processGroup(server);
  const members: ProcessMemory[] = [];
  for (const pid of numericDirs()) {
    if (processGroup(pid) !== group) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      members.push({
        pid,
        // 40 characters name the process ("next-server (v16.4.6)") without a long command line in the table.
        name: readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim().slice(0, 40) || "?",
        peakRssMiB: Math.round(readStatusKiB(status, "VmHWM") / 1024),
        rssMiB: Math.round(readStatusKiB(status, "VmRSS") / 1024),
      });
    } catch {
      // Exited while we looked.
    }
  }
  return members;
}
