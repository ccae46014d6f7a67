/**
 * Transfers in the ledger (contract section 15; docs/decisions/061): `decideTransferUnderWalletLocks`, one statement
 * that claims the sender's row terminal, debits the sender, claims the recipient's `transfer_in` row and credits it,
 * with balanced postings through `transfers_in_transit`.
 *
 * The lock order is staged, not timed: in a scratch database the real function gets a gate (an advisory lock the test
 * holds) right after its first wallet lock; A -> B and B -> A are started, the test waits in pg_stat_activity until
 * both wait where they can, then opens the gate. With the real order (lower user id first) the second transfer waits
 * for the first and both finish; the negative control (the same function with the sender's wallet locked first) then
 * deadlocks every time (40P01).
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import {
  decideTransferUnderWalletLocks,
  fingerprint,
  jsonResponseTemplate,
  operationKey,
  succeededTransferResponse,
  type TransferDecisionRequest,
} from "@/lib/ledger";
import { releaseBehindGate, scratchWithTwoUsers } from "../helpers/staged-gate";
import { createTestUser, dropScratchDatabases, testPool } from "../helpers/db";
import { balanceOf, freshRefId, seedBalance } from "../helpers/ledger";

afterAll(async () => {
  await dropScratchDatabases();
});

const MAX_BALANCE_MINOR = 10_000_000;

function transferRequest(senderId: string, recipientId: string, amountMinor: number, refId = freshRefId("tr")) {
  return {
    key: operationKey(senderId, "transfer", refId),
    recipientId,
    amountMinor,
    currency: "USD",
    params: { amount: amountMinor, currency: "USD", to: recipientId },
    recipientParams: { from: senderId, transferRef: refId },
    maxBalanceMinor: MAX_BALANCE_MINOR,
    responses: {
      succeeded: jsonResponseTemplate(201, (at) => ({ transfer: { refId, amount: amountMinor, createdAt: at } })),
      insufficientFunds: { status: 402, body: '{"code":"insufficient_funds"}' },
      debtOutstanding: jsonResponseTemplate(402, (debt) => ({ code: "debt_outstanding", debt })),
      recipientCannotReceive: { status: 422, body: '{"code":"recipient_cannot_receive"}' },
    },
  } satisfies TransferDecisionRequest;
}

async function postingsOf(userId: string, entryId: number) {
  const result = await testPool().query<{ account: string; amount: string; after: string | null }>(
    `SELECT account, amount_minor::text AS amount, balance_after_minor::text AS after FROM ledger_postings
      WHERE user_id = $1 AND entry_id = $2 ORDER BY account`,
    [userId, entryId],
  );
  return result.rows;
}

async function twoUsers(senderBalance: number, recipientBalance = 0) {
  const sender = await createTestUser();
  const recipient = await createTestUser();
  if (senderBalance) await seedBalance(sender.id, senderBalance);
  if (recipientBalance) await seedBalance(recipient.id, recipientBalance);
  return { sender, recipient };
}

describe("decideTransferUnderWalletLocks", () => {
  it("debits the sender, credits the recipient through their own row, and books both through transfers_in_transit", async () => {
    const { sender, recipient } = await twoUsers(5000);
    const decided = await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 1200));
    expect(decided?.entry.status).toBe("succeeded");
    expect(decided?.response.status).toBe(201);
    expect(JSON.parse(decided!.response.body).transfer.createdAt).toBe(decided!.entry.createdAt.toISOString());
    expect(await balanceOf(sender.id)).toBe(3800);
    expect(await balanceOf(recipient.id)).toBe(1200);
    const received = await testPool().query(
      "SELECT id::int AS id, ref_id, status, amount_minor::int AS amount, params FROM ledger_entries WHERE user_id = $1",
      [recipient.id],
    );
    expect(received.rows).toHaveLength(1);
    const incoming = received.rows[0];
    expect(incoming).toMatchObject({ ref_id: `transfer:${decided!.entry.id}`, status: "succeeded", amount: 1200 });
    expect(incoming.params).toMatchObject({ from: sender.id, transferEntryId: String(decided!.entry.id) });
    expect(await postingsOf(sender.id, decided!.entry.id)).toEqual([
      { account: "transfers_in_transit", amount: "1200", after: null },
      { account: "wallet", amount: "-1200", after: "3800" },
    ]);
    expect(await postingsOf(recipient.id, incoming.id)).toEqual([
      { account: "transfers_in_transit", amount: "-1200", after: null },
      { account: "wallet", amount: "1200", after: "1200" },
    ]);
  });

  it("stores the 201 the API answers (succeededTransferResponse: the note only when given), and each row's fingerprint", async () => {
    const { sender, recipient } = await twoUsers(5000);
    for (const note of ["for the flowers", undefined]) {
      const refId = freshRefId("tr-body");
      const params = { amount: 700, currency: "USD", to: recipient.email, ...(note ? { note } : {}) };
      const recipientParams = { from: sender.email, ...(note ? { note } : {}) };
      const request = {
        ...transferRequest(sender.id, recipient.id, 700, refId),
        params,
        recipientParams,
        responses: {
          ...transferRequest(sender.id, recipient.id, 700, refId).responses,
          succeeded: succeededTransferResponse(refId, 700, "USD", params),
        },
      };
      const decided = await decideTransferUnderWalletLocks(testPool(), request);
      const at = decided!.entry.createdAt.toISOString();
      expect(JSON.parse(decided!.response.body)).toEqual({
        transfer: {
          refId,
          to: recipient.email,
          ...(note ? { note } : {}),
          amount: 700,
          currency: "USD",
          status: "succeeded",
          failureReason: null,
          createdAt: at,
          updatedAt: at,
        },
      });
      const rows = await testPool().query<{ type: string; fingerprint: string }>(
        `SELECT type, fingerprint FROM ledger_entries
          WHERE (user_id = $1 AND id = $2) OR (user_id = $3 AND ref_id = 'transfer:' || $2) ORDER BY type`,
        [sender.id, decided!.entry.id, recipient.id],
      );
      expect(rows.rows).toEqual([
        { type: "transfer", fingerprint: fingerprint("transfer", params) },
        { type: "transfer_in", fingerprint: fingerprint("transfer_in", recipientParams) },
      ]);
    }
  });

  it("stores 402 insufficient_funds and moves nothing when the balance is short", async () => {
    const { sender, recipient } = await twoUsers(500);
    const decided = await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 501));
    expect(decided?.entry).toMatchObject({ status: "failed", failureReason: "insufficient_funds" });
    expect(decided?.response).toEqual({ status: 402, body: '{"code":"insufficient_funds"}' });
    expect(await balanceOf(sender.id)).toBe(500);
    expect(await balanceOf(recipient.id)).toBe(0);
  });

  it("stores 402 debt_outstanding with the debt while the sender owes anything", async () => {
    const { sender, recipient } = await twoUsers(0);
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 250, 'USD')",
      [sender.id],
    );
    const decided = await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 100));
    expect(decided?.entry.failureReason).toBe("debt_outstanding");
    expect(JSON.parse(decided!.response.body)).toEqual({ code: "debt_outstanding", debt: "2.50" });
  });

  it("stores 422 recipient_cannot_receive when the credit would pass the recipient's ceiling", async () => {
    const { sender, recipient } = await twoUsers(5000, MAX_BALANCE_MINOR - 100);
    const decided = await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 101));
    expect(decided?.entry.failureReason).toBe("recipient_cannot_receive");
    expect(decided?.response.status).toBe(422);
    expect(await balanceOf(sender.id)).toBe(5000);
    const fits = await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 100));
    expect(fits?.entry.status).toBe("succeeded");
  });

  it("repays the recipient's debt first", async () => {
    const { sender, recipient } = await twoUsers(5000);
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 300, 'USD')",
      [recipient.id],
    );
    await decideTransferUnderWalletLocks(testPool(), transferRequest(sender.id, recipient.id, 1000));
    const wallet = await testPool().query(
      "SELECT balance_minor::int AS b, debt_minor::int AS d FROM wallets WHERE user_id = $1",
      [recipient.id],
    );
    expect(wallet.rows[0]).toEqual({ b: 700, d: 0 });
  });

  it("claims once under 1000 identical concurrent calls: one movement, one row on each side", async () => {
    const { sender, recipient } = await twoUsers(100_000);
    const request = transferRequest(sender.id, recipient.id, 700);
    const pool = new pg.Pool({ connectionString: testPool().options.connectionString, max: 20 });
    try {
      const results = await Promise.all(
        Array.from({ length: 1000 }, () => decideTransferUnderWalletLocks(pool, request)),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    } finally {
      await pool.end();
    }
    expect(await balanceOf(sender.id)).toBe(99_300);
    expect(await balanceOf(recipient.id)).toBe(700);
    const rows = await testPool().query("SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = ANY($1)", [
      [sender.id, recipient.id],
    ]);
    expect(rows.rows[0].n).toBe(2);
  });

  it("runs 200 concurrent A -> B and B -> A transfers without a deadlock, balances exact", async () => {
    const { sender: a, recipient: b } = await twoUsers(1_000_000, 1_000_000);
    const pool = new pg.Pool({ connectionString: testPool().options.connectionString, max: 16 });
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 200 }, (_, i) =>
          i % 2 === 0
            ? decideTransferUnderWalletLocks(pool, transferRequest(a.id, b.id, 300))
            : decideTransferUnderWalletLocks(pool, transferRequest(b.id, a.id, 100)),
        ),
      );
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    } finally {
      await pool.end();
    }
    expect(await balanceOf(a.id)).toBe(1_000_000 - 100 * 300 + 100 * 100);
    expect(await balanceOf(b.id)).toBe(1_000_000 + 100 * 300 - 100 * 100);
  });
});

// The real function's text, with a gate after its first wallet lock; `senderFirst` is the negative control: the
// sender's wallet locked before the recipient's whatever their ids.
const FUNCTION_TEXT = readFileSync("prisma/functions/ledger_decide_transfer.sql", "utf8");
const GATE = "PERFORM pg_advisory_xact_lock_shared(61061);\n  ";

function gatedFunction(senderFirst: boolean): string {
  const first = "  IF p_user_id < p_recipient_id THEN";
  const room = "  SELECT r.room INTO v_room";
  const second = "  IF p_user_id > p_recipient_id THEN";
  if (![first, room, second].every((part) => FUNCTION_TEXT.includes(part))) throw new Error("function text moved");
  let text = FUNCTION_TEXT.replace(room, `  ${GATE}${room.trimStart()}`);
  if (senderFirst) text = text.replace(first, "  IF true THEN").replace(second, "  IF false THEN");
  return text;
}

async function stagedOppositeTransfers(senderFirst: boolean): Promise<PromiseSettledResult<unknown>[]> {
  const { url, admin, a, b } = await scratchWithTwoUsers("transfer_lock_order");
  try {
    await admin.query(gatedFunction(senderFirst));
    // Both statements wait on a lock when the gate opens: the gate, or (real order) the other's wallet.
    return await releaseBehindGate({ url, admin, gateKey: 61061, applicationName: "transfer_staged" }, [
      (session) => decideTransferUnderWalletLocks(session, transferRequest(a.id, b.id, 100)),
      (session) => decideTransferUnderWalletLocks(session, transferRequest(b.id, a.id, 100)),
    ]);
  } finally {
    await admin.end();
  }
}

describe("the lock order of two wallets (staged)", () => {
  it("A -> B and B -> A started together both finish: the lower user id is locked first", async () => {
    const results = await stagedOppositeTransfers(false);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
  });

  it("negative control: with the sender's wallet locked first, the same staging deadlocks (40P01)", async () => {
    const results = await stagedOppositeTransfers(true);
    const codes = results.map((r) => (r.status === "rejected" ? (r.reason as { code?: string }).code : "ok"));
    expect(codes).toContain("40P01");
  });
});
