/**
 * The storm's summary: counts of what the clients did and saw per operation kind, what the ledger ended with, the
 * staged crashes, the reconciler's work, and every invariant's result. Printed to stdout as plain text.
 */
import type { CheckResult, LedgerRow } from "./client-checks";
import { attemptKey, type OperationKind, type OperationRecord } from "./observations";

/**
 * Entries no client asks for: the bank's lost and reversed disputes (contract section 12), the bank's payout returns
 * (section 14) and the recipients' side of transfers (section 15).
 */
type BankMovement = "chargeback" | "chargeback_reversal" | "payout_return" | "transfer_in";

/** One line of the operations table. */
export interface KindTotals {
  kind: OperationKind | BankMovement | "all";
  /** Client operations started (each may send several requests). */
  operations: number;
  /** HTTP requests sent ("operations attempted"). */
  attempted: number;
  /** Distinct ledger keys the requests addressed ("distinct operations"). */
  distinct: number;
  ok2xx: number;
  replays: number;
  s402: number;
  s409: number;
  s422: number;
  s429: number;
  s503: number;
  s5xx: number;
  /** Timeouts and dropped connections (the client does not know what happened). */
  lost: number;
  /** Rows that succeeded: credited (top-ups, rewards, reversals) or debited (payments, refunds, chargebacks). */
  succeeded: number;
  failed: number;
  /** Sum of the succeeded rows' amounts, minor units. */
  movedMinor: number;
}

/** Counts per kind and in total, from the clients' records and the ledger rows. */
export function totalsByKind(operations: readonly OperationRecord[], rows: readonly LedgerRow[]): KindTotals[] {
  const kinds: OperationKind[] = ["topup", "reward", "payment", "refund", "payout", "transfer"];
  const bankKinds: BankMovement[] = ["chargeback", "chargeback_reversal", "payout_return", "transfer_in"];
  const empty = (kind: KindTotals["kind"]): KindTotals => ({
    kind,
    operations: 0,
    attempted: 0,
    distinct: 0,
    ok2xx: 0,
    replays: 0,
    s402: 0,
    s409: 0,
    s422: 0,
    s429: 0,
    s503: 0,
    s5xx: 0,
    lost: 0,
    succeeded: 0,
    failed: 0,
    movedMinor: 0,
  });
  const lines = new Map<KindTotals["kind"], KindTotals>(
    [...kinds, ...bankKinds, "all" as const].map((kind) => [kind, empty(kind)]),
  );
  const keys = new Map<OperationKind, Set<string>>(kinds.map((kind) => [kind, new Set<string>()]));
  for (const operation of operations) {
    const line = lines.get(operation.kind)!;
    line.operations += 1;
    for (const attempt of operation.attempts) {
      line.attempted += 1;
      keys.get(operation.kind)!.add(attemptKey(operation, attempt));
      const outcome = attempt.outcome;
      if (outcome.kind !== "response") {
        line.lost += 1;
        continue;
      }
      if (outcome.replayed) line.replays += 1;
      if (outcome.status >= 200 && outcome.status < 300) line.ok2xx += 1;
      else if (outcome.status === 402) line.s402 += 1;
      else if (outcome.status === 409) line.s409 += 1;
      else if (outcome.status === 422) line.s422 += 1;
      else if (outcome.status === 429) line.s429 += 1;
      else if (outcome.status === 503) line.s503 += 1;
      else if (outcome.status >= 500) line.s5xx += 1;
    }
  }
  for (const row of rows) {
    // An adjustment credits a top-up's charge: counted on the top-ups' line.
    const line = lines.get(row.type === "adjustment" ? "topup" : row.type)!;
    if (row.status === "succeeded") {
      line.succeeded += 1;
      line.movedMinor += row.amountMinor;
    } else if (row.status === "failed") {
      line.failed += 1;
    }
  }
  for (const kind of kinds) lines.get(kind)!.distinct = keys.get(kind)!.size;
  const all = lines.get("all")!;
  for (const kind of [...kinds, ...bankKinds]) {
    const line = lines.get(kind)!;
    for (const field of Object.keys(all) as (keyof KindTotals)[]) {
      if (field === "kind") continue;
      (all[field] as number) += line[field] as number;
    }
  }
  return [...lines.values()];
}

/** Renders rows of cells as a left-aligned first column and right-aligned numbers, two spaces apart. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join("  ");
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** The operations table of the summary. */
export function renderTotals(totals: readonly KindTotals[]): string {
  const header = [
    "operation",
    "attempted",
    "distinct",
    "2xx",
    "replays",
    "402",
    "409",
    "422",
    "429",
    "503",
    "5xx",
    "lost",
    "succeeded",
    "failed",
    "moved",
  ];
  const rows = totals.map((line) => [
    line.kind,
    ...[
      line.attempted,
      line.distinct,
      line.ok2xx,
      line.replays,
      line.s402,
      line.s409,
      line.s422,
      line.s429,
      line.s503,
      line.s5xx,
      line.lost,
      line.succeeded,
      line.failed,
      line.movedMinor,
    ].map(String),
  ]);
  return renderTable(header, rows);
}

/** The invariants block: one line per check, its violations indented below it. */
export function renderChecks(checks: readonly CheckResult[]): string {
  const lines: string[] = [];
  for (const check of checks) {
    lines.push(`  ${check.ok ? "ok  " : "FAIL"}  ${check.name}${check.scope ? `  (${check.scope})` : ""}`);
    for (const violation of check.violations) lines.push(`          - ${violation}`);
  }
  return lines.join("\n");
}
