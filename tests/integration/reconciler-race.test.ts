/**
 * Staged: the reconciler's bank-to-ledger claim collides with a live request's uncommitted claim
 * of the same key instead of racing it (contract section 1; docs/development.md note 15). A second connection holds an
 * uncommitted insert of the ledger row for a charge's key; the test waits on pg_stat_activity until the
 * reconciler's claim is blocked by that connection, then commits or rolls back. Nothing sleeps.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import { createCharge } from "@/lib/bank/client";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { findEntryByKey, insertClaim } from "@/lib/ledger/claim";
import { completeEntry } from "@/lib/ledger/transitions";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { createTestUser } from "../helpers/db";
import { balanceOf, claimRequest, countRows, dedicatedClient, freshRefId } from "../helpers/ledger";
import {
  auditTrail,
  backendPid,
  BANK_TIMEOUT_MS,
  passOptions,
  startTestBank,
  storedResponseOf,
  type TestBank,
} from "./reconciler-fixtures";
import { waitForBlockedSessions } from "../helpers/wait";

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

/** A user, a ref id and a succeeded charge at the bank for that key, with no ledger row yet. */
async function chargedKey(amountMinor: number) {
  const user = await createTestUser();
  const refId = freshRefId("race");
  const charged = await createCharge(
    { merchantRef: merchantRefFor(user.id, refId), amountMinor, currency: "USD" },
    { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
  );
  if (charged.kind !== "charge" || charged.charge.status !== "succeeded")
    throw new Error(`no succeeded charge: ${JSON.stringify(charged)}`);
  return { user, refId, charge: charged.charge };
}

/**
 * Opens a transaction on a dedicated connection that claims the key like a live request (uncommitted), starts a
 * reconciler pass, and returns once the pass's claim is blocked on that transaction.
 */
async function holdClaimAndStartPass(
  userId: string,
  refId: string,
  amountMinor: number,
  alsoComplete: { chargeId: string } | null,
) {
  const client: pg.Client = await dedicatedClient("reconciler-race-holder");
  const pid = await backendPid(client);
  await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
  const held = await insertClaim(client, claimRequest(userId, { refId, amountMinor }));
  if (!held) throw new Error("the holder must win the claim: no row existed");
  if (alsoComplete) {
    // The live request got `succeeded` from the bank and completes in the same (still open) transaction.
    const done = await completeEntry(
      { userId, entryId: held.id },
      {
        actor: "request",
        guard: { kind: "lease", fencingToken: held.fencingToken },
        credit: true,
        bankChargeId: alsoComplete.chargeId,
      },
      client,
    );
    if (done.kind !== "moved") throw new Error("the holder's completion must move the row");
  }
  const pass = reconcileOnce(passOptions(bank.url, [userId]));
  await waitForBlockedSessions({ blockedBy: pid });
  return { client, pass };
}

describe("staged race: the reconciler's claim of a charge's missing row vs a live request's uncommitted claim", () => {
  it("commit (the request finished and credited): the reconciler treats the row as someone else's; one row, one credit", async () => {
    const { user, refId, charge } = await chargedKey(3300);
    const { client, pass } = await holdClaimAndStartPass(user.id, refId, 3300, { chargeId: charge.id });
    await client.query("COMMIT");
    await client.end();

    const result = await pass;
    expect(result).toMatchObject({ completed: 0, failed: 0 });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(3300);
    const entry = await findEntryByKey({ userId: user.id, type: "topup", refId });
    // Nothing of the reconciler on the row: its claim inserted nothing and it moved nothing.
    expect((await auditTrail(user.id, entry!.id)).map((t) => t.actor)).toEqual(["request", "request"]);
    // The request is alive (its row is young): storing the first response is its job, not the reconciler's.
    expect(await storedResponseOf(user.id, entry!.id)).toBeNull();
  });

  it("commit (the request's row is still unfinished): the reconciler completes that row from the charge, status-only, once", async () => {
    const { user, refId } = await chargedKey(1100);
    const { client, pass } = await holdClaimAndStartPass(user.id, refId, 1100, null);
    await client.query("COMMIT");
    await client.end();

    const result = await pass;
    expect(result).toMatchObject({ completed: 1 });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(1100);
    const entry = await findEntryByKey({ userId: user.id, type: "topup", refId });
    expect((await auditTrail(user.id, entry!.id)).map((t) => `${t.actor}:${t.to}`)).toEqual([
      "request:initiated",
      "reconciler:succeeded",
    ]);
  });

  it("rollback (the request died before committing its claim): the reconciler claims the key itself and credits it once", async () => {
    const { user, refId, charge } = await chargedKey(2200);
    const { client, pass } = await holdClaimAndStartPass(user.id, refId, 2200, { chargeId: charge.id });
    await client.query("ROLLBACK");
    await client.end();

    const result = await pass;
    expect(result).toMatchObject({ examined: 1, completed: 1 });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(2200);
    const entry = await findEntryByKey({ userId: user.id, type: "topup", refId });
    expect(entry).toMatchObject({ status: "succeeded", bankChargeId: charge.id });
    expect((await auditTrail(user.id, entry!.id)).map((t) => `${t.actor}:${t.to}`)).toEqual([
      "reconciler:initiated",
      "reconciler:succeeded",
    ]);
    expect((await storedResponseOf(user.id, entry!.id))?.status).toBe(201);
  });
});
