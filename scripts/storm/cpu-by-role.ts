/**
 * CPU time per role of the cluster storm (the per-request CPU of app, PostgreSQL and Redis),
 * read from Linux's /proc before and after the traffic. Each process is identified by its PID and start time; its
 * share is what it used between the two samples (all of it for a process started in between). utime + stime +
 * cutime + cstime, so a reaped child (a PostgreSQL backend that exited) is counted in its parent. Roles by command
 * name (`postgres`, `patroni`, `redis-server`, `haproxy`, `pgbouncer`, `etcd`) and, for the app, by the process
 * groups of its instances. A process killed by a fault takes its time since the first sample along: a lower bound.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc times: USER_HZ, 100 on every Linux this project runs on. */
const TICKS_PER_S = 100;

export const CPU_ROLES = ["app", "postgres", "patroni", "redis", "haproxy", "pgbouncer", "etcd"] as const;
export type CpuRole = (typeof CPU_ROLES)[number];
/** CPU per role (seconds in a sample's total, milliseconds per request in a result). */
export type CpuByRole = Record<CpuRole, number>;
/** One sample: CPU seconds per process (`pid:starttime`) with its role. */
export type CpuSample = Map<string, { role: CpuRole; seconds: number }>;

const ROLE_BY_COMMAND: Record<string, CpuRole> = {
  postgres: "postgres",
  patroni: "patroni",
  "redis-server": "redis",
  haproxy: "haproxy",
  pgbouncer: "pgbouncer",
  etcd: "etcd",
};

/** CPU seconds used so far by every process of a role; `appGroups` are the app instances' process groups. */
export function sampleCpu(appGroups: readonly number[]): CpuSample {
  const sample: CpuSample = new Map();
  const groups = new Set(appGroups);
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    const command = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const role: CpuRole | undefined = groups.has(Number(fields[2])) ? "app" : ROLE_BY_COMMAND[command];
    if (!role) continue;
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
    sample.set(`${name}:${fields[19]}`, { role, seconds: ticks / TICKS_PER_S });
  }
  return sample;
}

/** What each role used between `before` and `after`, in CPU milliseconds per request (`requests` > 0). */
export function cpuMsPerRequest(before: CpuSample, after: CpuSample, requests: number): CpuByRole {
  const result: CpuByRole = { app: 0, postgres: 0, patroni: 0, redis: 0, haproxy: 0, pgbouncer: 0, etcd: 0 };
  for (const [key, now] of after) {
    const then = before.get(key)?.seconds ?? 0;
    result[now.role] += Math.max(0, now.seconds - then);
  }
  for (const role of CPU_ROLES) result[role] = (result[role] * 1000) / Math.max(1, requests);
  return result;
}
