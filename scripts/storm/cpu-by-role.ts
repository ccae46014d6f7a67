/**
 * CPU time per role of the cluster storm (issue 11, item 7: "the per-request CPU of app, PostgreSQL and Redis"),
 * read from Linux's /proc before and after the traffic: utime + stime + cutime + cstime of every live process,
 * so a reaped child (a PostgreSQL backend that exited) is counted once, in its parent. Roles by command name
 * (`postgres`, `patroni`, `redis-server`, `haproxy`, `pgbouncer`, `etcd`) and, for the app, by the process groups
 * of its instances. Processes killed by a fault take their CPU time with them, so the figures are a lower bound.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc times: 100 on every Linux this project runs on (CONFIG_HZ-independent). */
const TICKS_PER_S = 100;

export const CPU_ROLES = ["app", "postgres", "patroni", "redis", "haproxy", "pgbouncer", "etcd"] as const;
export type CpuRole = (typeof CPU_ROLES)[number];
export type CpuSample = Record<CpuRole, number>;

const ROLE_BY_COMMAND: Record<string, CpuRole> = {
  postgres: "postgres",
  patroni: "patroni",
  "redis-server": "redis",
  haproxy: "haproxy",
  pgbouncer: "pgbouncer",
  etcd: "etcd",
};

/** CPU seconds used so far by each role; `appGroups` are the process groups of the app instances. */
export function sampleCpu(appGroups: readonly number[]): CpuSample {
  const sample: CpuSample = { app: 0, postgres: 0, patroni: 0, redis: 0, haproxy: 0, pgbouncer: 0, etcd: 0 };
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
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
    const role: CpuRole | undefined = groups.has(Number(fields[2])) ? "app" : ROLE_BY_COMMAND[command];
    if (role) sample[role] += ticks / TICKS_PER_S;
  }
  return sample;
}

/** `after - before` per role, in CPU milliseconds per request (`requests` > 0). */
export function cpuMsPerRequest(before: CpuSample, after: CpuSample, requests: number): CpuSample {
  const result = { ...before };
  for (const role of CPU_ROLES) result[role] = (Math.max(0, after[role] - before[role]) * 1000) / Math.max(1, requests);
  return result;
}
