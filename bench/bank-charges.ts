/**
 * The sandbox bank's CPU per charge: one bank process (`bank/main.ts`, as the stacks start it) and a local webhook
 * receiver answering 204, on 127.0.0.1. Charges go through lib/bank/client.ts at a fixed concurrency; a charge's
 * cost includes its state writes, its settlement and its webhook's delivery (measured until every webhook was
 * received and the bank has gone quiet). Measured at two state sizes, so a cost that grows with the state file
 * shows as a ratio.
 *
 * Standalone: `node --import tsx bench/bank-charges.ts [--charges 2000] [--prefill 10000] [--compare DIR] [--rounds N]`.
 * `--compare DIR` measures the bank of another checkout too (e.g. `git worktree add /tmp/before <commit>`, or a
 * `git archive` of it with a node_modules link), alternating the two banks `--rounds` times (default 1), and prints
 * the ratio of their figures from the same run: on a shared machine only such ratios are comparable.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBank } from "../scripts/lib/stack";
import { createCharge } from "../lib/bank/client";
import { randomWebhookSecret } from "../scripts/lib/secrets";
import { processCpuMs } from "./cpu-accounting";
import { ratio } from "./stats";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

/** One measured batch of charges. */
export interface BankChargePoint {
  /** Charges already in the bank's state before the batch. */
  readonly stateCharges: number;
  readonly charges: number;
  /** Bank process CPU (user + system) per charge, ms, including settlement and webhook delivery. */
  readonly cpuMsPerCharge: number;
  readonly chargesPerS: number;
}

/** Concurrent charge requests: the HTTP bench's 32 connections make about this many top-ups in flight at once. */
const CONCURRENCY = 16;

/** Starts a receiver that answers every webhook 204 and counts them. */
async function startReceiver(): Promise<{ server: Server; url: string; received: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      count++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("bench: receiver has no port");
  return { server, url: `http://127.0.0.1:${address.port}`, received: () => count };
}

async function chargeMany(bankUrl: string, prefix: string, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      const result = await createCharge(
        { merchantRef: `${prefix}-${index}`, amountMinor: 100, currency: "USD" },
        { bankUrl, timeoutMs: 30_000 },
      );
      if (result.kind !== "charge") throw new Error(`bench: bank charge ${prefix}-${index}: ${JSON.stringify(result)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("bench: the bank's webhooks did not all arrive");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Runs `charges` charges on a fresh bank, then fills its state to `prefill` charges and runs `charges` more.
 * `root` is the checkout whose bank runs (default this one). Returns one point per state size. Throws when a
 * charge is not acknowledged or webhooks go missing.
 */
export async function benchBankCharges(options: {
  charges: number;
  prefill: number;
  root?: string;
}): Promise<BankChargePoint[]> {
  const receiver = await startReceiver();
  const stateDir = await mkdtemp(join(tmpdir(), "bench-bank-"));
  const bank = await startBank({
    env: {
      APP_URL: receiver.url,
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: randomWebhookSecret(),
      BANK_WEBHOOK_DELAY_MS: "0",
    },
    root: options.root,
  });
  try {
    const points: BankChargePoint[] = [];
    let made = 0;
    const measure = async (label: string) => {
      // Unmeasured warm-up (JIT, connections), then the measured batch.
      await chargeMany(bank.url, `${label}-warm`, 200);
      made += 200;
      await waitFor(() => receiver.received() >= made, 60_000);
      const stateCharges = made;
      const cpuBefore = processCpuMs(bank.pid);
      const startedMs = performance.now();
      await chargeMany(bank.url, label, options.charges);
      made += options.charges;
      await waitFor(() => receiver.received() >= made, 120_000);
      const wallMs = performance.now() - startedMs;
      const cpuMs = processCpuMs(bank.pid) - cpuBefore;
      points.push({
        stateCharges,
        charges: options.charges,
        cpuMsPerCharge: cpuMs / options.charges,
        chargesPerS: (options.charges * 1000) / wallMs,
      });
    };
    await measure("small");
    const fill = Math.max(0, options.prefill - made);
    await chargeMany(bank.url, "fill", fill);
    made += fill;
    await waitFor(() => receiver.received() >= made, 600_000);
    await measure("large");
    return points;
  } finally {
    await bank.stop();
    await new Promise((resolve) => receiver.server.close(resolve));
    await rm(stateDir, { recursive: true, force: true });
  }
}

/** Renders the points as a table. */
export function renderBankCharges(points: readonly BankChargePoint[]): string {
  const lines = [
    "charges in state  measured  bank CPU ms/charge  charges/s",
    ...points.map(
      (p) =>
        `${String(p.stateCharges).padStart(16)}  ${String(p.charges).padStart(8)}  ${p.cpuMsPerCharge.toFixed(3).padStart(18)}  ${p.chargesPerS.toFixed(0).padStart(9)}`,
    ),
  ];
  return lines.join("\n");
}

/**
 * Renders a comparison: for each state size, the CPU per charge of the `other` checkout's bank and of this one
 * (means over the rounds) and their ratio (this / other).
 */
export function renderBankComparison(
  otherLabel: string,
  other: readonly BankChargePoint[][],
  self: readonly BankChargePoint[][],
): string {
  const mean = (rounds: readonly BankChargePoint[][], index: number) =>
    rounds.reduce((sum, points) => sum + (points[index]?.cpuMsPerCharge ?? 0), 0) / rounds.length;
  const sizes = self[0]?.map((p) => p.stateCharges) ?? [];
  const rows = sizes.map((size, index) => {
    const before = mean(other, index);
    const after = mean(self, index);
    return `${String(size).padStart(16)}  ${before.toFixed(3).padStart(16)}  ${after.toFixed(3).padStart(16)}  ${(ratio(after, before) ?? Number.NaN).toFixed(2).padStart(5)}`;
  });
  return [
    `bank CPU ms/charge, mean of ${self.length} round(s); other = ${otherLabel}`,
    "charges in state  other ms/charge  this ms/charge  ratio",
    ...rows,
  ].join("\n");
}

function stringArg(name: string): string | null {
  const index = process.argv.indexOf(`--${name}`);
  if (index < 0) return null;
  const value = process.argv[index + 1];
  if (!value || value.startsWith("--")) throw new Error(`--${name} takes a value`);
  return value;
}

function numberArg(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} takes a whole number`);
  return value;
}

const HELP = `usage: node --import tsx bench/bank-charges.ts [--charges 2000] [--prefill 10000] [--compare DIR] [--rounds N]

The sandbox bank's CPU per charge, driven directly (no app), optionally against the bank of the checkout in DIR.
Exit codes: 0 measured; 1 failed.`;

async function main(): Promise<void> {
  exitWithHelpIfAsked(HELP);
  const options = { charges: numberArg("charges", 2000), prefill: numberArg("prefill", 10_000) };
  const compare = stringArg("compare");
  if (compare === null) {
    console.log(renderBankCharges(await benchBankCharges(options)));
    return;
  }
  const rounds = Math.max(1, numberArg("rounds", 1));
  const other: BankChargePoint[][] = [];
  const self: BankChargePoint[][] = [];
  for (let round = 1; round <= rounds; round++) {
    // Alternated, so a change in the machine's load during the run falls on both.
    other.push(await benchBankCharges({ ...options, root: compare }));
    console.log(`round ${round}, ${compare}:\n${renderBankCharges(other.at(-1) ?? [])}`);
    self.push(await benchBankCharges(options));
    console.log(`round ${round}, this checkout:\n${renderBankCharges(self.at(-1) ?? [])}`);
  }
  console.log(renderBankComparison(compare, other, self));
}

if (process.argv[1]?.endsWith("bank-charges.ts")) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
