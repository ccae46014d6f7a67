/**
 * Contract sections 5 and 7.6 (case C15's second half): a settlement that fails every time is flagged after
 * SETTLE_ATTEMPTS_MAX attempts, and the audit (`npm run audit`, exit 1) names the succeeded charge left uncredited,
 * although the reconciler keeps renewing the row's lease. Negative control, runnable here: the same audit with
 * renewed leases excusing the row (as the top-up/charge check 7.2 does for charges in flight) reports nothing.
 *
 * The credit is refused by the database on every attempt: the wallet already holds 2^53 - 500 minor units (a
 * top-up the bank charged, credited and reconciled), so the next credit of 1000 breaks the balance CHECK. Real
 * PostgreSQL, real sandbox bank, the real CLI.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "@/lib/audit/run-audit";
import { createSucceededChargesCreditedCheck } from "@/lib/audit/checks/succeeded-charges-credited";
import { createTopupsMatchBankChargesCheck } from "@/lib/audit/checks/topups-match-bank-charges";
import { env } from "@/lib/env";
import { getEntryById } from "@/lib/ledger/transitions";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { createTestUser } from "../helpers/db";
import { balanceOf } from "../helpers/ledger";
import {
  BANK_TIMEOUT_MS,
  passOptions,
  startTestBank,
  stuckTopup,
  waitForChargeStatus,
  type TestBank,
} from "./reconciler-fixtures";

const run = promisify(execFile);

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

/** 2^53 - 500: the wallet's balance CHECK (< 2^53) refuses any further credit of 500 or more. */
const NEAR_CHECK_MINOR = 2 ** 53 - 500;

/** Lease taken by the last pass, in ms: live while the audit runs, as a reconciler renewing it every pass leaves it. */
const LIVE_LEASE_MS = 120_000;

/** A user whose second top-up's charge succeeded and whose credit the database refuses; settled until flagged. */
async function flaggedSettlement() {
  const user = await createTestUser();
  const full = await stuckTopup(user.id, { amountMinor: NEAR_CHECK_MINOR, chargeAt: bank.url });
  await waitForChargeStatus(bank.url, full.merchantRef, "succeeded");
  resetChargeCursors();
  expect(await reconcileOnce(passOptions(bank.url, [user.id]))).toMatchObject({ completed: 1 });
  expect(await balanceOf(user.id)).toBe(NEAR_CHECK_MINOR);

  const stuck = await stuckTopup(user.id, { amountMinor: 1000, chargeAt: bank.url });
  await waitForChargeStatus(bank.url, stuck.merchantRef, "succeeded");
  const attemptsMax = env().SETTLE_ATTEMPTS_MAX;
  // Each pass takes the row over once (a 1 ms lease, so the next pass may take it again) and fails to credit it; the
  // last pass renews the lease for real, as the reconciler does on every pass in production.
  for (let pass = 0; pass < attemptsMax; pass++) {
    const entry = await getEntryById(stuck.ref);
    if (entry?.settleFlaggedAt) break;
    await reconcileOnce(passOptions(bank.url, [user.id], { leaseMs: 1, rowsMax: 1 }));
  }
  await new Promise((resolve) => setTimeout(resolve, 5));
  const last = await reconcileOnce(passOptions(bank.url, [user.id], { leaseMs: LIVE_LEASE_MS }));
  expect(last.completed).toBe(0);
  const entry = await getEntryById(stuck.ref);
  return { user, stuck, entry: entry! };
}

describe("7.6: a succeeded charge left uncredited is reported whatever its lease", () => {
  it("a settlement refused every time is flagged after SETTLE_ATTEMPTS_MAX, and npm run audit exits 1 naming its charge", async () => {
    const { user, stuck, entry } = await flaggedSettlement();
    expect(entry.status).toBe("processing");
    expect(entry.settleFailures).toBeGreaterThanOrEqual(env().SETTLE_ATTEMPTS_MAX);
    expect(entry.settleFlaggedAt).not.toBeNull();
    expect(entry.settleLastError).toContain("wallets_balance_range");
    // The renewed lease: the row looks in flight.
    expect(entry.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now());

    const cli = await run(process.execPath, ["--import", "tsx", "scripts/audit.ts", "--user", user.id], {
      env: { ...process.env, BANK_URL: bank.url, STUCK_AFTER_S: "0" },
    }).then(
      () => ({ code: 0, stdout: "", stderr: "" }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(cli.code).toBe(1);
    const printed = `${cli.stderr}\n${cli.stdout}`;
    expect(printed).toContain("FAIL succeeded_charges_credited");
    // The only failing checks: the others read the live lease as "in flight" (what case C15 slipped through); the
    // books' reconciliation with the bank sees the same charge: the bank holds it, the clearing account does not.
    expect(printed.match(/^FAIL .*$/gm)).toEqual([
      expect.stringContaining("succeeded_charges_credited"),
      expect.stringContaining("bank_clearing_matches_bank"),
    ]);
    const report = JSON.parse(cli.stdout.trim().split("\n").at(-1)!) as {
      checks: { name: string; violations: string[] }[];
    };
    const violations = report.checks.find((check) => check.name === "succeeded_charges_credited")!.violations;
    expect(violations).toEqual([expect.stringContaining(stuck.merchantRef)]);
    expect(violations[0]).toMatch(
      /credited 0 times \(top-up processing, lease live .* failed settlement\(s\), flagged /,
    );
  });

  it("negative control: the same audit, with renewed leases excusing the row, misses it", async () => {
    const { user, stuck } = await flaggedSettlement();
    const bankOptions = { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS };
    const scope = { userIds: [user.id] };
    const judged = await runAudit({
      checks: [createSucceededChargesCreditedCheck(bankOptions, scope, { stuckAfterS: 0 })],
    });
    expect(judged.ok).toBe(false);
    expect(judged.checks[0]!.violations).toEqual([expect.stringContaining(stuck.merchantRef)]);

    const excusing = await runAudit({
      checks: [
        createSucceededChargesCreditedCheck(bankOptions, scope, { stuckAfterS: 0, excuseLiveLeases: true }),
        createTopupsMatchBankChargesCheck(bankOptions, scope),
      ],
    });
    expect(excusing).toMatchObject({ ok: true });
  });

  it("a charge younger than STUCK_AFTER_S is not judged yet; a credited one never is a violation", async () => {
    const { user } = await flaggedSettlement();
    const check = createSucceededChargesCreditedCheck(
      { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
      { userIds: [user.id] },
      { stuckAfterS: 3600 },
    );
    expect(await check.run()).toMatchObject({ ok: true, violations: [] });
  });
});
