/**
 * The mail outbox (docs/decisions/054-mail-outbox.md) on a real PostgreSQL and a real SMTP server (MailDev, started
 * here): a receipt is queued by the commit that makes the money final, once; a mail server that is down delays mail
 * and changes no money, and mail resumes when it returns; two senders never send one message; a message whose
 * outcome is unknown is never sent again; what SMTP said is read from the error's fields.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeEntry, markProcessing } from "../../lib/ledger/transitions";
import { readMailOverview } from "../../lib/mail/read-mail-overview";
import { queueMail, settleMail, takeDueMail } from "../../lib/mail/outbox";
import { classifySmtpFailure } from "../../lib/mail/smtp-outcome";
import { operationKey } from "../../lib/ledger/keys";
import { claimPayout } from "../../lib/ledger/payouts";
import { createPayment } from "../../lib/payments/create-payment";
import { problemStoredResponse } from "../../lib/problems";
import { createTransfer } from "../../lib/transfers/create-transfer";
import { reverseTransfer } from "../../lib/transfers/reverse-transfer";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, seedBalance } from "../helpers/ledger";
import {
  inboxOf,
  lostSenderScenario,
  type MailScratch,
  onlyDue,
  outboxRows,
  pass,
  scratchTopup,
  scratchUser,
  serverDownScenario,
  staleTokenScenario,
  startMailScratch,
} from "./mail-fixtures";

async function creditedTopup(userId: string, amountMinor: number) {
  const claimed = await claimEntry(claimRequest(userId, { amountMinor }));
  const moved = await markProcessing({ userId, entryId: claimed.id }, claimed.fencingToken);
  if (moved.kind !== "moved") throw new Error("setup: the top-up did not move to processing");
  const guard = { kind: "lease", fencingToken: moved.entry.fencingToken } as const;
  await completeEntry({ userId, entryId: claimed.id }, { actor: "request", guard, credit: true });
  return claimed;
}

describe("receipts are queued by the commit that makes the money final", () => {
  it("a succeeded top-up queues one receipt; its row names the entry and no amount", async () => {
    const user = await createTestUser();
    expect(await outboxRows(testPool(), user.id)).toEqual([]);
    const claimed = await creditedTopup(user.id, 2500);
    const rows = await outboxRows(testPool(), user.id);
    expect(rows).toHaveLength(1);
    // Its status is not read: the stack's app may be sending it already.
    expect(rows[0]).toMatchObject({ kind: "receipt", entry_id: claimed.id, payload: null });
  });

  it("a payment decided in one statement queues its receipt; a refused one (402) queues none", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const paid = await createPayment({
      userId: user.id,
      orderId: `o-${randomUUID()}`,
      amountMinor: 600,
      currency: "USD",
    });
    expect(paid.kind).toBe("response");
    const refused = await createPayment({
      userId: user.id,
      orderId: `o-${randomUUID()}`,
      amountMinor: 600,
      currency: "USD",
    });
    expect(refused.kind === "response" && refused.response.status).toBe(402);
    const rows = await outboxRows(testPool(), user.id);
    expect(rows.map((row) => row.kind)).toEqual(["receipt"]);
  });

  it("a transfer queues a receipt for the sender and one for the recipient, a refused one (402) none, a reversal one more each", async () => {
    const [sender, recipient] = [await createTestUser(), await createTestUser()];
    await seedBalance(sender.id, 1000);
    const transfer = (amountMinor: number) =>
      createTransfer({
        userId: sender.id,
        refId: `t-${randomUUID()}`,
        to: recipient.email,
        amountMinor,
        currency: "USD",
      });
    const refId = `t-${randomUUID()}`;
    const sent = await createTransfer({
      userId: sender.id,
      refId,
      to: recipient.email,
      amountMinor: 600,
      currency: "USD",
    });
    expect(sent.kind).toBe("response");
    const refused = await transfer(600);
    expect(refused.kind === "response" && refused.response.status).toBe(402);
    expect((await outboxRows(testPool(), sender.id)).map((row) => row.kind)).toEqual(["receipt"]);
    expect((await outboxRows(testPool(), recipient.id)).map((row) => row.kind)).toEqual(["receipt"]);
    // An admin's reversal: one more receipt on each side (contract section 15.1).
    const admin = await createTestUser({ role: "admin" });
    const reversed = await reverseTransfer({ userId: sender.id, refId, reason: "Sent by mistake", adminId: admin.id });
    expect(reversed.kind === "response" && reversed.response.status).toBe(201);
    expect(await outboxRows(testPool(), sender.id)).toHaveLength(2);
    expect(await outboxRows(testPool(), recipient.id)).toHaveLength(2);
  });

  it("a payout queues its receipt when the bank paid it, not when its money is held", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 5000);
    const refusal = problemStoredResponse("insufficient_funds", "test");
    const claimed = await claimPayout(
      {
        key: operationKey(user.id, "payout", `po-${randomUUID()}`),
        amountMinor: 1000,
        currency: "USD",
        params: { amount: 1000, currency: "USD", destination: "4000000002" },
        leaseOwner: "test",
        leaseMs: 30_000,
        dailyLimitMinor: 1_000_000,
        refusals: { insufficientFunds: refusal, debtOutstanding: refusal, limitExceeded: refusal },
      },
      testPool(),
    );
    if (claimed.kind !== "held") throw new Error(`setup: payout ${claimed.kind}`);
    expect(await outboxRows(testPool(), user.id)).toEqual([]);
    const ref = { userId: user.id, entryId: claimed.entry.id };
    await completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: false });
    expect(await outboxRows(testPool(), user.id)).toEqual([
      expect.objectContaining({ kind: "receipt", entry_id: claimed.entry.id }),
    ]);
  });

  it("the same event queued again queues nothing (the event key is the claim)", async () => {
    const user = await createTestUser();
    const mail = { eventKey: `test:${randomUUID()}`, kind: "password_changed" as const, userId: user.id, payload: {} };
    expect(await queueMail(testPool(), mail)).toBe("queued");
    expect(await queueMail(testPool(), mail)).toBe("already_queued");
    expect(await outboxRows(testPool(), user.id)).toHaveLength(1);
  });
});

describe("delivery", () => {
  let scratch: MailScratch;
  beforeAll(async () => {
    scratch = await startMailScratch();
  }, 120_000);
  afterAll(async () => {
    await scratch?.stop();
  });

  it("a mail server that is down delays mail and changes no money; mail resumes when it returns", async () => {
    await serverDownScenario(scratch);
  });

  it("two senders at once: each message is taken by one of them and sent once", async () => {
    const user = await scratchUser(scratch);
    for (const amount of [100, 200, 300]) await scratchTopup(scratch, user.id, amount);
    await onlyDue(scratch, user.id);
    const [first, second] = await Promise.all([
      pass(scratch, scratch.catcher.smtpUrl, "sender-a"),
      pass(scratch, scratch.catcher.smtpUrl, "sender-b"),
    ]);
    expect(first.sent + second.sent).toBe(3);
    expect(await inboxOf(scratch, user.email)).toHaveLength(3);
  });

  it("a sender that stopped mid-send leaves the message unknown, never sent a second time", async () => {
    await lostSenderScenario(scratch);
  });

  it("a stale sender cannot settle a row taken again since (fencing token)", async () => {
    await staleTokenScenario(scratch);
  });

  it("the admin's overview counts the waiting and lists the failed and unknown, newest first", async () => {
    const user = await scratchUser(scratch);
    for (const amount of [1, 2, 3]) await scratchTopup(scratch, user.id, amount);
    await onlyDue(scratch, user.id);
    const taken = await takeDueMail(scratch.db, { workerId: "overview", limit: 3, leaseMs: 60_000 });
    expect(taken).toHaveLength(3);
    await settleMail(scratch.db, taken[0]!, { kind: "failed", error: "550 no such user" });
    await settleMail(scratch.db, taken[1]!, { kind: "unknown", error: "connection lost after DATA" });
    const before = await readMailOverview(10, scratch.db);
    expect(before.counts.sending).toBeGreaterThanOrEqual(1);
    const mine = before.attention.filter((mail) => mail.email === user.email);
    expect(mine.map((mail) => [mail.status, mail.lastError])).toEqual([
      ["unknown", "connection lost after DATA"],
      ["failed", "550 no such user"],
    ]);
    expect(mine[0]).toMatchObject({ kind: "receipt", attempts: 1 });
    expect((await readMailOverview(1, scratch.db)).attention).toHaveLength(1);
  });
});

describe("what SMTP said, read from the error's fields", () => {
  it.each([
    [{ code: "ESOCKET", originalCode: "ECONNREFUSED", command: "CONN" }, "not_accepted"],
    [{ code: "EENVELOPE", responseCode: 450, command: "RCPT TO" }, "not_accepted"],
    [{ code: "EMESSAGE", responseCode: 451, command: "DATA" }, "not_accepted"],
    [{ code: "EENVELOPE", responseCode: 550, command: "RCPT TO" }, "refused"],
    [{ code: "EMESSAGE", responseCode: 554, command: "DATA" }, "refused"],
    [{ code: "EAUTH", command: "AUTH PLAIN" }, "not_accepted"],
    [{ code: "ETIMEDOUT", command: "DATA" }, "maybe_accepted"],
    [{ code: "ECONNECTION" }, "maybe_accepted"],
    [new Error("anything else"), "maybe_accepted"],
    ["not an error", "maybe_accepted"],
  ])("%j is %s", (error, expected) => {
    expect(classifySmtpFailure(error)).toBe(expected);
  });
});
