/**
 * The invariant audit (contract section 7) against a real ledger and a real sandbox bank: it passes on a clean
 * ledger and fails on each seeded violation. Each test audits only its own user (the database is shared with
 * other test files, some of which credit wallets directly on purpose).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { completeEntry } from "@/lib/ledger/transitions";
import { runAudit } from "@/lib/audit/run-audit";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { freePort } from "@/scripts/lib/ports";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId } from "../helpers/ledger";
import { BANK_TIMEOUT_MS, passOptions, startTestBank, stuckTopup, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
});

afterAll(async () => {
  await bank?.stop();
});

beforeEach(() => {
  resetChargeCursors();
});

/** A user whose ledger is clean and non-trivial: two top-ups settled by the reconciler and one that failed. */
async function cleanUser() {
  const user = await createTestUser();
  await stuckTopup(user.id, { amountMinor: 1500, chargeAt: bank.url });
  await stuckTopup(user.id, { amountMinor: 250, processing: false, chargeAt: null, ageS: 5 });
  await stuckTopup(user.id, { refId: freshRefId("sbx-decline-"), chargeAt: bank.url });
  const pass = await reconcileOnce(passOptions(bank.url, [user.id]));
  expect(pass).toMatchObject({ completed: 2, failed: 1 });
  return user;
}

function audit(userId: string, bankUrl = bank.url) {
  return runAudit({ userIds: [userId], bankUrl, bankTimeoutMs: BANK_TIMEOUT_MS });
}

function failing(report: Awaited<ReturnType<typeof runAudit>>) {
  return report.checks.filter((check) => !check.ok).map((check) => check.name);
}

describe("audit", () => {
  it("passes on a clean ledger: every check holds", async () => {
    const user = await cleanUser();
    const report = await audit(user.id);
    expect(report.checks.map((c) => c.name)).toEqual([
      "balance_matches_ledger",
      "no_duplicate_keys",
      "topups_match_bank_charges",
      "reward_cap",
      "stored_responses_replayable",
      "no_expired_unfinished_rows",
      "succeeded_charges_credited",
      "refunds_within_topups",
      "bank_refunds_recorded",
      "lost_disputes_charged_back",
      "returned_within_charge",
      "books_balanced",
      "journal_matches_entries",
      "wallet_accounts_match",
      "bank_clearing_matches_bank",
      "payouts_match_bank",
      "transfers_balanced",
    ]);
    expect(report.ok).toBe(true);
    for (const check of report.checks) expect(check, check.name).toMatchObject({ ok: true, violations: [] });
  });

  it("7.1 fails when a wallet balance is bumped by SQL (and the wallet is off its account in the books)", async () => {
    const user = await cleanUser();
    await testPool().query("UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1", [user.id]);
    const report = await audit(user.id);
    expect(report.ok).toBe(false);
    expect(failing(report)).toEqual(["balance_matches_ledger", "wallet_accounts_match"]);
    expect(report.checks[0]!.violations).toEqual([
      `user ${user.id}: wallet balance minus debt 1751 but succeeded credits minus debits are 1750`,
    ]);
  });

  it("7.1 fails for a wallet that holds a balance beside a debt, though balance minus debt matches the ledger", async () => {
    // 100 held and 100 owed: balance − debt is the ledger's 1750 + 0, so the sum alone cannot see it (the negative
    // control: the check before this rule passed this wallet). A credit repays the debt first (contract section 12).
    const user = await cleanUser();
    await testPool().query(
      "UPDATE wallets SET balance_minor = balance_minor + 100, debt_minor = debt_minor + 100 WHERE user_id = $1",
      [user.id],
    );
    const report = await audit(user.id);
    expect(failing(report)).toEqual(["balance_matches_ledger"]);
    expect(report.checks[0]!.violations).toEqual([
      `user ${user.id}: wallet holds 1850 beside a debt of 100 (a credit repays the debt first)`,
    ]);
  });

  it("7.2 fails for a top-up credited without a bank charge, and for a succeeded charge without its top-up", async () => {
    const user = await cleanUser();
    // Credited with no charge at the bank (what a forged webhook or a bug would do).
    const claim = await claimEntry(claimRequest(user.id, { refId: freshRefId("ghost"), amountMinor: 40 }));
    await completeEntry(
      { userId: user.id, entryId: claim.id },
      { actor: "admin", guard: { kind: "status_only" }, credit: true },
    );
    // Charged at the bank, with no row (the reconciler has not run since).
    const { createCharge } = await import("@/lib/bank/client");
    const { merchantRefFor } = await import("@/lib/bank/merchant-ref");
    await createCharge(
      { merchantRef: merchantRefFor(user.id, freshRefId("orphan")), amountMinor: 60, currency: "USD" },
      { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
    );

    const report = await audit(user.id);
    // The books see the ghost too: the clearing account holds 40 the bank never had (the orphan charge is recent).
    expect(failing(report)).toEqual(["topups_match_bank_charges", "bank_clearing_matches_bank"]);
    expect(report.checks.find((c) => c.name === "bank_clearing_matches_bank")!.violations).toEqual([
      "entries without a bank charge: the bank reports 0 held for it, the bank clearing account 40",
    ]);
    const violations = report.checks.find((c) => c.name === "topups_match_bank_charges")!.violations;
    expect(violations).toHaveLength(2);
    expect(violations.some((v) => v.includes("has no top-up row"))).toBe(true);
    expect(violations.some((v) => v.includes("without any bank charge"))).toBe(true);

    // After a reconciler pass the orphan charge has its top-up; the ghost credit is still reported.
    await reconcileOnce(passOptions(bank.url, [user.id]));
    const after = await audit(user.id);
    expect(after.checks.find((c) => c.name === "topups_match_bank_charges")!.violations).toEqual([
      expect.stringContaining("without any bank charge"),
    ]);
  });

  it("7.4 fails for a stored response that is not JSON", async () => {
    const user = await cleanUser();
    await testPool().query(
      "UPDATE ledger_entries SET response_body = '{\"topup\":' WHERE user_id = $1 AND id = (SELECT min(id) FROM ledger_entries WHERE user_id = $1)",
      [user.id],
    );
    const report = await audit(user.id);
    expect(failing(report)).toEqual(["stored_responses_replayable"]);
    expect(report.checks.find((c) => c.name === "stored_responses_replayable")!.violations).toEqual([
      expect.stringContaining("the stored body cannot be read back"),
    ]);
  });

  it("7.4 fails for a stored response altered at rest by a single byte (a trailing space)", async () => {
    const user = await cleanUser();
    await testPool().query(
      "UPDATE ledger_entries SET response_body = response_body || ' ' WHERE user_id = $1 AND id = (SELECT min(id) FROM ledger_entries WHERE user_id = $1)",
      [user.id],
    );
    const report = await audit(user.id);
    expect(failing(report)).toEqual(["stored_responses_replayable"]);
    expect(report.checks.find((c) => c.name === "stored_responses_replayable")!.violations).toEqual([
      expect.stringContaining("altered at rest"),
    ]);
  });

  it("7.5 fails for an unfinished row with an expired lease while the bank answers; the next pass fixes it", async () => {
    const user = await cleanUser();
    await stuckTopup(user.id, { amountMinor: 80, chargeAt: bank.url });
    const report = await audit(user.id);
    // Its charge succeeded at the bank, so 7.2 also sees a succeeded charge whose top-up is not (yet) succeeded.
    expect(failing(report)).toEqual(["topups_match_bank_charges", "no_expired_unfinished_rows"]);
    expect(report.checks.find((c) => c.name === "no_expired_unfinished_rows")!.violations).toEqual([
      expect.stringContaining("lease of dead-worker (attempt 1) expired"),
    ]);
    await reconcileOnce(passOptions(bank.url, [user.id]));
    expect((await audit(user.id)).ok).toBe(true);
  });

  it("with the bank unreachable the charge check fails as 'bank unreachable' (no crash), and 7.5 reports the rows it had to leave", async () => {
    const user = await cleanUser();
    await stuckTopup(user.id, { amountMinor: 80, chargeAt: bank.url });
    const closed = `http://127.0.0.1:${await freePort()}`;
    const report = await audit(user.id, closed);
    expect(report.ok).toBe(false);
    const bankChecks = [
      "topups_match_bank_charges",
      "succeeded_charges_credited",
      "lost_disputes_charged_back",
      "bank_clearing_matches_bank",
      "payouts_match_bank",
    ];
    expect(failing(report)).toEqual(bankChecks);
    for (const name of bankChecks)
      expect(report.checks.find((c) => c.name === name)!.violations).toEqual([
        expect.stringMatching(/^bank unreachable/),
      ]);
    const expired = report.checks.find((c) => c.name === "no_expired_unfinished_rows") as {
      ok: boolean;
      notes?: string[];
    };
    expect(expired.ok).toBe(true);
    expect(expired.notes?.[0]).toMatch(/^bank unreachable .*1 unfinished row/);
  });
});
