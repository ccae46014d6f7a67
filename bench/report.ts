/**
 * The benchmark's report: the machine it ran on, plain-text tables for the terminal and docs/benchmarks.md, and the
 * targets (docs/benchmarks.md, "Targets") judged on the figures of the same run.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly postgres: string;
  readonly pgbench: string | null;
}

/** Describes this machine; `postgres` is the server's `SHOW server_version`, `pgbench` its path or null. */
export function machineInfo(postgres: string, pgbench: string | null): MachineInfo {
  let pgbenchVersion: string | null = null;
  if (pgbench) {
    try {
      pgbenchVersion = execFileSync(pgbench, ["--version"], { encoding: "utf8" }).trim();
    } catch {
      pgbenchVersion = "unknown version";
    }
  }
  let cpu = cpus()[0]?.model ?? "unknown";
  try {
    // Inside a VM, os.cpus() can be empty or generic; /proc/cpuinfo names the model when it is known.
    cpu = /^model name\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpu;
  } catch {
    // Not Linux: keep os.cpus()'s answer.
  }
  return {
    cpu,
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel: release(),
    node: process.version,
    postgres,
    pgbench: pgbenchVersion,
  };
}

/** Renders a table: first column left-aligned, the others right-aligned, two spaces apart, a rule under the header. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** A number for a table cell: `digits` decimals, thousands unseparated; "n/a" for null. */
export function cell(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "n/a";
  return value.toFixed(digits);
}

/** One target (docs/benchmarks.md) and whether this run met it. */
export interface TargetResult {
  readonly target: string;
  readonly measured: string;
  /** null when it could not be measured (e.g. pgbench missing). */
  readonly met: boolean | null;
}

/** The targets block. */
export function renderTargets(targets: readonly TargetResult[]): string {
  return renderTable(
    ["target", "measured", "met"],
    targets.map((target) => [target.target, target.measured, target.met === null ? "n/a" : target.met ? "yes" : "NO"]),
  );
}
