/**
 * An admin's reversal of a transfer (contract section 15; docs/decisions/063): `reverseTransfer`, one statement
 * (ledger_reverse_transfer) that claims the sender's `transfer_reversal` row keyed by the transfer's ref id, debits
 * the recipient through their `transfer_reversal_out` row (into debt when the money was spent) and credits the
 * sender, booked through `transfers_in_transit`.
 *
 * Staged, not timed: in a scratch database the real functions get a gate (an advisory lock the test holds) right
 * after their first wallet lock; a reversal of A -> B and a new transfer B -> A are started, the test waits in
 * pg_stat_activity until both wait, then opens the gate. With the one lock order both finish; the negative control
 * (the reversal locking the recipient's wallet first) deadlocks. The once-guard's negative control: the same function
 * with the claim's key changed per call reverses one transfer twice.
 */
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createBooksBalancedCheck, createJournalMatchesEntriesCheck } from "@/lib/audit/checks/books";
import { createTransfersCheck } from "@/lib/audit/checks/transfers";
import {
  decideTransferUnderWalletLocks,
  fingerprint,
  jsonResponseTemplate,
  operationKey,
  reverseTransferUnderWalletLocks,
  type Queryable,
  type TransferDecisionRequest,
  type TransferReversalRequest,
} from "@/lib/ledger";
import { reverseTransfer, type ReverseTransferResult } from "@/lib/transfers/reverse-transfer";
import { releaseBehindGate, scratchWithTwoUsers } from "../helpers/staged-gate";
import { createTestUser, dropScratchDatabases, testPool, type TestUser } from "../helpers/db";
import { balanceOf, dedicatedClient, freshRefId, seedBalance } from "../helpers/ledger";
import { waitFor } from "../helpers/wait";

afterAll(async () => {
  await dropScratchDatabases();
});

function transferRequest(
  sender: string,
  recipient: { id: string; email: string },
  amountMinor: number,
  refId = freshRefId("tr"),
) {
  return {
    key: operationKey(sender, "transfer", refId),
    recipientId: recipient.id,
    amountMinor,
    currency: "USD",
    params: { amount: amountMinor, currency: "USD", to: recipient.email },
    recipientParams: { from: sender },
    maxBalanceMinor: 10_000_000,
    responses: {
      succeeded: jsonResponseTemplate(201, (at) => ({ transfer: { refId, amount: amountMinor, createdAt: at } })),
      insufficientFunds: { status: 402, body: '{"code":"insufficient_funds"}' },
      debtOutstanding: jsonResponseTemplate(402, (debt) => ({ code: "debt_outstanding", debt })),
      recipientCannotReceive: { status: 422, body: '{"code":"recipient_cannot_receive"}' },
    },
  } satisfies TransferDecisionRequest;
}

/** A succeeded transfer of `amountMinor` from `sender` to `recipient`; returns its ref id. */
async function sent(sender: TestUser, recipient: TestUser, amountMinor: number, db: Queryable = testPool()) {
  const request = transferRequest(sender.id, recipient, amountMinor);
  const decided = await decideTransferUnderWalletLocks(db, request);
  expect(decided?.entry.status).toBe("succeeded");
  return request.key.refId;
}

async function walletOf(userId: string) {
  const result = await testPool().query<{ b: number; d: number }>(
    "SELECT balance_minor::int AS b, debt_minor::int AS d FROM wallets WHERE user_id = $1",
    [userId],
  );
  return result.rows[0];
}

async function entriesOf(userId: string, type: string) {
  const result = await testPool().query<{ id: number; ref_id: string; status: string; amount: number; params: object }>(
    `SELECT id::int AS id, ref_id, status, amount_minor::int AS amount, params FROM ledger_entries
      WHERE user_id = $1 AND type = $2 ORDER BY id`,
    [userId, type],
  );
  return result.rows;
}

async function postingsOf(userId: string, entryId: number) {
  const result = await testPool().query<{ account: string; amount: string; after: string | null }>(
    `SELECT account, amount_minor::text AS amount, balance_after_minor::text AS after FROM ledger_postings
      WHERE user_id = $1 AND entry_id = $2 ORDER BY account`,
    [userId, entryId],
  );
  return result.rows;
}

async function auditOf(users: TestUser[]) {
  const scope = { userIds: users.map((u) => u.id) };
  return Promise.all(
    [createBooksBalancedCheck(scope), createJournalMatchesEntriesCheck(scope), createTransfersCheck(scope)].map((c) =>
      c.run(),
    ),
  );
}

async function threeUsers(senderBalance: number) {
  const sender = await createTestUser();
  const recipient = await createTestUser();
  const admin = await createTestUser({ role: "admin" });
  await seedBalance(sender.id, senderBalance);
  return { sender, recipient, admin };
}

function bodyOf(result: ReverseTransferResult) {
  if (result.kind !== "response") throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return result.response;
}

describe("reverseTransfer", () => {
  it("debits the recipient, credits the sender through their own rows, and books both through transfers_in_transit", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const refId = await sent(sender, recipient, 1200);
    const result = await reverseTransfer({ userId: sender.id, refId, reason: "Sent by mistake", adminId: admin.id });
    const response = bodyOf(result);
    expect(result).toMatchObject({ replayed: false });
    expect(response.status).toBe(201);
    const [reversal] = await entriesOf(sender.id, "transfer_reversal");
    expect(reversal).toMatchObject({
      ref_id: refId,
      status: "succeeded",
      amount: 1200,
      params: { reason: "Sent by mistake" },
    });
    expect(JSON.parse(response.body)).toEqual({
      reversal: {
        transferRefId: refId,
        to: recipient.email,
        amount: 1200,
        currency: "USD",
        reason: "Sent by mistake",
        status: "succeeded",
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    });
    const [out] = await entriesOf(recipient.id, "transfer_reversal_out");
    const [received] = await entriesOf(recipient.id, "transfer_in");
    expect(out).toMatchObject({
      ref_id: `transfer_reversal:${reversal!.id}`,
      status: "succeeded",
      amount: 1200,
      params: {
        reason: "Sent by mistake",
        reversalEntryId: String(reversal!.id),
        transferInEntryId: String(received!.id),
      },
    });
    // Each row's fingerprint is its own type's over the reason (the ids the statement adds are not fingerprinted).
    const fingerprints = await testPool().query<{ type: string; fingerprint: string }>(
      "SELECT type, fingerprint FROM ledger_entries WHERE (user_id, id) IN (($1, $2), ($3, $4)) ORDER BY type",
      [sender.id, reversal!.id, recipient.id, out!.id],
    );
    expect(fingerprints.rows).toEqual([
      { type: "transfer_reversal", fingerprint: fingerprint("transfer_reversal", { reason: "Sent by mistake" }) },
      {
        type: "transfer_reversal_out",
        fingerprint: fingerprint("transfer_reversal_out", { reason: "Sent by mistake" }),
      },
    ]);
    expect(await balanceOf(sender.id)).toBe(5000);
    expect(await balanceOf(recipient.id)).toBe(0);
    expect(await postingsOf(sender.id, reversal!.id)).toEqual([
      { account: "transfers_in_transit", amount: "-1200", after: null },
      { account: "wallet", amount: "1200", after: "5000" },
    ]);
    expect(await postingsOf(recipient.id, out!.id)).toEqual([
      { account: "transfers_in_transit", amount: "1200", after: null },
      { account: "wallet", amount: "-1200", after: "0" },
    ]);
    const audit = await auditOf([sender, recipient]);
    expect(audit.filter((check) => !check.ok)).toEqual([]);
    const transitions = await testPool().query("SELECT actor, detail FROM ledger_transitions WHERE entry_id = $1", [
      reversal!.id,
    ]);
    expect(transitions.rows.map((row) => row.actor)).toEqual(["admin", "admin"]);
    expect(transitions.rows[1].detail).toContain(`reversed by admin ${admin.id}`);
  });

  it("reverses once under 50 concurrent identical calls: one credit, one debit, every answer byte-identical", async () => {
    const { sender, recipient, admin } = await threeUsers(10_000);
    const refId = await sent(sender, recipient, 700);
    const input = { userId: sender.id, refId, reason: "Fraud confirmed", adminId: admin.id };
    const results = await Promise.all(Array.from({ length: 50 }, () => reverseTransfer(input)));
    const responses = results.map(bodyOf);
    expect(new Set(responses.map((r) => `${r.status} ${r.body}`)).size).toBe(1);
    expect(results.filter((r) => r.kind === "response" && !r.replayed)).toHaveLength(1);
    expect(await entriesOf(sender.id, "transfer_reversal")).toHaveLength(1);
    expect(await entriesOf(recipient.id, "transfer_reversal_out")).toHaveLength(1);
    expect(await balanceOf(sender.id)).toBe(10_000);
    expect(await balanceOf(recipient.id)).toBe(0);
    const again = await reverseTransfer({ ...input, adminId: "another-admin" });
    expect(bodyOf(again)).toEqual(responses[0]);
    expect(again).toMatchObject({ replayed: true });
    expect((await auditOf([sender, recipient])).filter((check) => !check.ok)).toEqual([]);
  });

  it("takes the whole amount from a recipient who spent it: what the balance no longer covers becomes debt", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const third = await createTestUser();
    const refId = await sent(sender, recipient, 1000);
    await sent(recipient, third, 600);
    const result = await reverseTransfer({
      userId: sender.id,
      refId,
      reason: "Chargeback-like recovery",
      adminId: admin.id,
    });
    expect(bodyOf(result).status).toBe(201);
    expect(await walletOf(recipient.id)).toEqual({ b: 0, d: 600 });
    expect(await walletOf(sender.id)).toEqual({ b: 5000, d: 0 });
    const [out] = await entriesOf(recipient.id, "transfer_reversal_out");
    expect(await postingsOf(recipient.id, out!.id)).toContainEqual({
      account: "wallet",
      amount: "-1000",
      after: "-600",
    });
    // The debt is repaid first by the recipient's next credit (contract section 12).
    await sent(third, recipient, 250);
    expect(await walletOf(recipient.id)).toEqual({ b: 0, d: 350 });
    expect((await auditOf([sender, recipient, third])).filter((check) => !check.ok)).toEqual([]);
  });

  it("repays a debt of the sender first", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const refId = await sent(sender, recipient, 1000);
    await testPool().query("UPDATE wallets SET balance_minor = 0, debt_minor = 300 WHERE user_id = $1", [sender.id]);
    await reverseTransfer({ userId: sender.id, refId, reason: "Mistake", adminId: admin.id });
    expect(await walletOf(sender.id)).toEqual({ b: 700, d: 0 });
  });

  it("refuses a failed transfer (409), an unknown one and a received one (404); nothing is claimed", async () => {
    const { sender, recipient, admin } = await threeUsers(100);
    const failed = transferRequest(sender.id, recipient, 5000);
    expect((await decideTransferUnderWalletLocks(testPool(), failed))?.entry.status).toBe("failed");
    const base = { userId: sender.id, reason: "Try", adminId: admin.id };
    expect(await reverseTransfer({ ...base, refId: failed.key.refId })).toEqual({
      kind: "transfer_not_reversible",
      status: "failed",
    });
    expect(await reverseTransfer({ ...base, refId: freshRefId("none") })).toEqual({ kind: "transfer_not_found" });
    const refId = await sent(sender, recipient, 50);
    const [received] = await entriesOf(recipient.id, "transfer_in");
    expect(await reverseTransfer({ ...base, userId: recipient.id, refId: received!.ref_id })).toEqual({
      kind: "transfer_not_found",
    });
    expect(await entriesOf(sender.id, "transfer_reversal")).toEqual([]);
    expect(refId).toBeTruthy();
  });

  it("negative control: the audit names a second debit of a reversed transfer's recipient (a double reversal)", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const refId = await sent(sender, recipient, 300);
    await reverseTransfer({ userId: sender.id, refId, reason: "Once", adminId: admin.id });
    expect((await auditOf([recipient])).filter((check) => !check.ok)).toEqual([]);
    const [received] = await entriesOf(recipient.id, "transfer_in");
    // What the once-guard prevents, written by hand: one more debit of the same received transfer, under a key no
    // reversal made, with its journal transaction (so only the transfers check can see it).
    await testPool().query(
      `SELECT ledger_debit_into_debt(c) FROM ledger_claim(
         p_user_id => $1, p_type => 'transfer_reversal_out', p_ref_id => 'transfer_reversal:0', p_amount_minor => 300,
         p_currency => 'USD', p_fingerprint => encode(sha256('control'), 'hex'), p_params => jsonb_build_object('transferInEntryId', $2::text),
         p_actor => 'admin', p_status => 'succeeded') AS c`,
      [recipient.id, String(received!.id)],
    );
    const transfers = await createTransfersCheck({ userIds: [recipient.id] }).run();
    expect(transfers.ok).toBe(false);
    expect(transfers.violations).toEqual([
      `reversal of transfer ${refId} of user ${sender.id}: the transfer user ${recipient.id} received was reversed more than once`,
      `transfer_reversal:0 of user ${recipient.id} was debited, but no reversal made it`,
    ]);
  });

  it("announces both sides to watched users, so both wallet pages follow the reversal live", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const refId = await sent(sender, recipient, 200);
    const listener = await dedicatedClient("reversal-listener");
    const heard: { userId: string; type: string; refId: string; status: string }[] = [];
    try {
      listener.on("notification", (message) => {
        if (message.channel === "ledger_changes" && message.payload) heard.push(JSON.parse(message.payload));
      });
      await listener.query("LISTEN ledger_changes");
      await testPool().query("SELECT live_watchers_register($1::text[], 300)", [[sender.id, recipient.id]]);
      await reverseTransfer({ userId: sender.id, refId, reason: "Live", adminId: admin.id });
      const [reversal] = await entriesOf(sender.id, "transfer_reversal");
      const expected = [
        { userId: sender.id, type: "transfer_reversal", refId, status: "succeeded" },
        {
          userId: recipient.id,
          type: "transfer_reversal_out",
          refId: `transfer_reversal:${reversal!.id}`,
          status: "succeeded",
        },
      ];
      await waitFor(
        () => heard,
        (events) => expected.every((e) => events.some((h) => JSON.stringify(h) === JSON.stringify(e))),
        { what: "both sides of the reversal announced", timeoutMs: 10_000, intervalMs: 10 },
      );
    } finally {
      await listener.end();
    }
  });

  it("refuses the same reversal with another reason (422 idempotency_key_reused): nothing moves again", async () => {
    const { sender, recipient, admin } = await threeUsers(5000);
    const refId = await sent(sender, recipient, 400);
    await reverseTransfer({ userId: sender.id, refId, reason: "First reason", adminId: admin.id });
    const other = await reverseTransfer({ userId: sender.id, refId, reason: "Second reason", adminId: admin.id });
    expect(other).toEqual({ kind: "mismatch", fields: ["reason"] });
    expect(await balanceOf(sender.id)).toBe(5000);
    expect(await entriesOf(recipient.id, "transfer_reversal_out")).toHaveLength(1);
  });
});

// The real functions' text, with a gate after their first wallet lock. `recipientFirst` is the lock order's negative
// control: the reversal locks the recipient's wallet first whatever the ids.
const TRANSFER_TEXT = readFileSync("prisma/functions/ledger_decide_transfer.sql", "utf8");
const REVERSAL_TEXT = readFileSync("prisma/functions/ledger_reverse_transfer.sql", "utf8");
const GATE = "PERFORM pg_advisory_xact_lock_shared(63063);\n    ";
const SECOND_LOCK = /(PERFORM ledger_lock_wallet\([^;]*;\n {4})(PERFORM ledger_lock_wallet)/g;

function gatedReversal(recipientFirst: boolean): string {
  if ((REVERSAL_TEXT.match(SECOND_LOCK) ?? []).length !== 2) throw new Error("function text moved");
  const text = REVERSAL_TEXT.replace(SECOND_LOCK, `$1${GATE}$2`);
  return recipientFirst ? text.replace("  IF p_user_id < p_recipient_id THEN", "  IF false THEN") : text;
}

// The transfer's gate after the recipient's lock (ledger_room_for_credit), which is its first lock when the sender's
// id is the higher one (B -> A here): both statements then hold one wallet when the gate opens.
function gatedTransfer(): string {
  const senderSecond = "  IF p_user_id > p_recipient_id THEN";
  if (!TRANSFER_TEXT.includes(senderSecond)) throw new Error("function text moved");
  return TRANSFER_TEXT.replace(senderSecond, `  ${GATE.trim()}\n${senderSecond}`);
}

/** A reversal request for the scratch databases' users, called on the ledger's statement directly. */
function reversalRequest(senderId: string, transferRefId: string, recipientId: string): TransferReversalRequest {
  return {
    key: operationKey(senderId, "transfer_reversal", transferRefId),
    recipientId,
    params: { reason: "staged" },
    recipientParams: { reason: "staged" },
    succeeded: jsonResponseTemplate(201, (at) => ({ reversal: { transferRefId, createdAt: at } })),
    detail: "reversed by admin test",
  };
}

async function stagedReversalAgainstTransfer(recipientFirst: boolean): Promise<PromiseSettledResult<unknown>[]> {
  const { url, admin, a, b } = await scratchWithTwoUsers("reversal_lock_order");
  try {
    await admin.query(gatedReversal(recipientFirst));
    await admin.query(gatedTransfer());
    const refId = await sent(a, b, 300, admin);
    // Both statements wait on a lock when the gate opens: the gate, or (one lock order) the other's first wallet.
    return await releaseBehindGate({ url, admin, gateKey: 63063, applicationName: "reversal_staged" }, [
      (session) => reverseTransferUnderWalletLocks(session, reversalRequest(a.id, refId, b.id)),
      (session) => decideTransferUnderWalletLocks(session, transferRequest(b.id, a, 100)),
    ]);
  } finally {
    await admin.end();
  }
}

describe("a reversal racing a new transfer between the same two users (staged)", () => {
  it("a reversal of A -> B and a new B -> A started together both finish: the lower user id is locked first", async () => {
    const results = await stagedReversalAgainstTransfer(false);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(results.every((r) => r.status === "fulfilled" && r.value !== null)).toBe(true);
  });

  it("negative control: with the recipient's wallet locked first, the same staging deadlocks (40P01)", async () => {
    const results = await stagedReversalAgainstTransfer(true);
    const codes = results.map((r) => (r.status === "rejected" ? (r.reason as { code?: string }).code : "ok"));
    expect(codes).toContain("40P01");
  });
});

describe("the once-guard: the claim keyed by the transfer's ref id", () => {
  async function reverseTwice(changeKey: boolean) {
    const { admin, a, b } = await scratchWithTwoUsers("reversal_once");
    try {
      if (changeKey) {
        const keyed = "p_user_id => p_user_id, p_type => 'transfer_reversal', p_ref_id => p_ref_id,";
        if (!REVERSAL_TEXT.includes(keyed)) throw new Error("function text moved");
        await admin.query(
          REVERSAL_TEXT.replace(
            keyed,
            keyed.replace("p_ref_id => p_ref_id", "p_ref_id => p_ref_id || ':' || gen_random_uuid()"),
          ),
        );
      }
      const refId = await sent(a, b, 300, admin);
      const request = reversalRequest(a.id, refId, b.id);
      const results = [
        await reverseTransferUnderWalletLocks(admin, request),
        await reverseTransferUnderWalletLocks(admin, request),
      ];
      const wallets = await admin.query<{ user_id: string; b: number }>(
        "SELECT user_id, balance_minor::int AS b FROM wallets ORDER BY user_id",
      );
      return { claimed: results.filter((r) => r !== null).length, balances: wallets.rows.map((row) => row.b) };
    } finally {
      await admin.end();
    }
  }

  it("with the real key the second reversal of one transfer claims nothing and moves nothing", async () => {
    expect(await reverseTwice(false)).toEqual({ claimed: 1, balances: [10_000, 10_000] });
  });

  it("negative control: with the key changed per call the same transfer is reversed twice", async () => {
    expect(await reverseTwice(true)).toEqual({ claimed: 2, balances: [10_300, 9_700] });
  });
});
