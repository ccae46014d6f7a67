/**
 * The mail outbox (docs/decisions/054-mail-outbox.md) on a real PostgreSQL and a real SMTP server (MailDev, started
 * here): a receipt is queued by the commit that makes the money final, once; a mail server that is down delays mail
 * and changes no money, and mail resumes when it returns; two senders never send one message; a message whose
 * outcome is unknown is never sent again; what SMTP said is read from the error's fields.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTransport } from "nodemailer";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../lib/migrate";
import { completeEntry, markProcessing } from "../../lib/ledger/transitions";
import { deliverDueMail } from "../../lib/mail/deliver-due-mail";
import { queueMail, settleMail, takeDueMail } from "../../lib/mail/outbox";
import { classifySmtpFailure } from "../../lib/mail/smtp-outcome";
import { createPayment } from "../../lib/payments/create-payment";
import { startMailCatcher, type MailCatcher } from "../../scripts/lib/mail-catcher";
import { freePort } from "../../scripts/lib/ports";
import { createScratchDatabase, createTestUser, dropScratchDatabases, testPool } from "../helpers/db";
import { claimEntry, claimRequest, seedBalance } from "../helpers/ledger";

let catcher: MailCatcher;
let mailDir: string;
/**
 * Delivery runs on a database of its own: the test stack's app sends the stack's outbox all the time (its own mail
 * worker), and would take this file's rows.
 */
let scratch: pg.Pool;

beforeAll(async () => {
  mailDir = mkdtempSync(join(tmpdir(), "mail-outbox-test-"));
  const url = await createScratchDatabase("mail_outbox");
  await migrate(url);
  scratch = new pg.Pool({ connectionString: url, max: 4 });
  catcher = await startMailCatcher({ mailDir });
}, 120_000);

afterAll(async () => {
  await scratch?.end();
  await dropScratchDatabases();
  await catcher?.service.stop();
  rmSync(mailDir, { recursive: true, force: true });
});

/** A user of the scratch database, with a wallet holding `balanceMinor`. */
async function scratchUser(balanceMinor: number): Promise<{ id: string; email: string }> {
  const id = `mail_${randomUUID().replaceAll("-", "")}`;
  const email = `${id}@example.test`;
  await scratch.query(`INSERT INTO "user" (id, name, email) VALUES ($1, 'Mail Test', $2)`, [id, email]);
  await scratch.query(`INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, $2, 'USD')`, [
    id,
    balanceMinor,
  ]);
  return { id, email };
}

/** A top-up row born succeeded (the receipt trigger fires on it as on any door's transition). */
async function scratchTopup(userId: string, amountMinor: number): Promise<void> {
  await scratch.query(
    `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status,
                                 response_status, response_body)
     VALUES ($1, 'topup', $2, $3, 'USD', repeat('0', 64), '{}', 'succeeded', 201, '{}')`,
    [userId, `t-${randomUUID()}`, amountMinor],
  );
}

/** The user's money as the scratch database holds it: balance and entries. */
async function moneyOf(userId: string): Promise<unknown> {
  const { rows } = await scratch.query(
    `SELECT (SELECT balance_minor FROM wallets WHERE user_id = $1) AS balance,
            (SELECT json_agg(json_build_object('id', id, 'status', status, 'amount', amount_minor) ORDER BY id)
               FROM ledger_entries WHERE user_id = $1) AS entries`,
    [userId],
  );
  return rows[0];
}

interface CaughtMail {
  subject: string;
  to: Array<{ address: string }>;
  text: string;
  headers: Record<string, string>;
}

async function inboxOf(catcherUrl: string, address: string): Promise<CaughtMail[]> {
  const response = await fetch(`${catcherUrl}/api/email`);
  const all = (await response.json()) as CaughtMail[];
  return all.filter((mail) => mail.to.some((to) => to.address.toLowerCase() === address.toLowerCase()));
}

async function outboxRows(userId: string, db: pg.Pool = scratch) {
  const { rows } = await db.query<{
    id: number;
    kind: string;
    status: string;
    attempts: number;
    entry_id: number | null;
    last_error: string | null;
    payload: unknown;
  }>(
    `SELECT id, kind, status, attempts, entry_id, last_error, payload FROM mail_outbox WHERE user_id = $1 ORDER BY id`,
    [userId],
  );
  return rows;
}

/** Only this test's user's rows are due: every other row is pushed into the future for the pass. */
async function onlyDue(userId: string): Promise<void> {
  await scratch.query(
    `UPDATE mail_outbox SET next_attempt_at = CASE WHEN user_id = $1 THEN now() - interval '1 second'
                                                   ELSE greatest(next_attempt_at, now() + interval '1 hour') END
      WHERE status = 'pending'`,
    [userId],
  );
}

function pass(smtpUrl: string, workerId = `test-${randomUUID().slice(0, 8)}`) {
  return deliverDueMail(scratch, {
    transport: createTransport({
      url: smtpUrl,
      connectionTimeout: 2_000,
      greetingTimeout: 2_000,
      socketTimeout: 5_000,
    }),
    from: "Wallet <no-reply@wallet.localhost>",
    workerId,
  });
}

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
    expect(await outboxRows(user.id, testPool())).toEqual([]);
    const claimed = await creditedTopup(user.id, 2500);
    const rows = await outboxRows(user.id, testPool());
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
    const rows = await outboxRows(user.id, testPool());
    expect(rows.map((row) => row.kind)).toEqual(["receipt"]);
  });

  it("the same event queued again queues nothing (the event key is the claim)", async () => {
    const user = await createTestUser();
    const mail = { eventKey: `test:${randomUUID()}`, kind: "password_changed" as const, userId: user.id, payload: {} };
    expect(await queueMail(testPool(), mail)).toBe("queued");
    expect(await queueMail(testPool(), mail)).toBe("already_queued");
    expect(await outboxRows(user.id, testPool())).toHaveLength(1);
  });
});

describe("delivery", () => {
  it("a mail server that is down delays mail and changes no money; mail resumes when it returns", async () => {
    const user = await scratchUser(4200);
    await scratchTopup(user.id, 4200);
    const moneyBefore = await moneyOf(user.id);
    // A port nothing listens on: the connection is refused, the message certainly not accepted.
    const downPort = await freePort();
    await onlyDue(user.id);
    const down = await pass(`smtp://127.0.0.1:${downPort}`);
    expect(down).toMatchObject({ sent: 0, retry: 1, unknown: 0, failed: 0 });
    const [waiting] = await outboxRows(user.id);
    expect(waiting).toMatchObject({ status: "pending", attempts: 1 });
    expect(waiting?.last_error).toMatch(/ECONNREFUSED/);
    expect(await moneyOf(user.id)).toEqual(moneyBefore);
    expect(await inboxOf(catcher.inboxUrl, user.email)).toEqual([]);

    // The server is back (the catcher): the next due pass sends it, once.
    await onlyDue(user.id);
    const back = await pass(catcher.smtpUrl);
    expect(back.sent).toBe(1);
    expect((await outboxRows(user.id))[0]).toMatchObject({ status: "sent", attempts: 2 });
    const caught = await inboxOf(catcher.inboxUrl, user.email);
    expect(caught.map((mail) => mail.subject)).toEqual(["Top-up of $42.00 received"]);
    expect(caught[0]?.text).toContain("$42.00");
    expect(await moneyOf(user.id)).toEqual(moneyBefore);

    // Nothing is due any more: another pass sends nothing.
    await onlyDue(user.id);
    expect((await pass(catcher.smtpUrl)).sent).toBe(0);
    expect(await inboxOf(catcher.inboxUrl, user.email)).toHaveLength(1);
  });

  it("two senders at once: each message is taken by one of them and sent once", async () => {
    const user = await scratchUser(0);
    for (const amount of [100, 200, 300]) await scratchTopup(user.id, amount);
    await onlyDue(user.id);
    const [first, second] = await Promise.all([pass(catcher.smtpUrl, "sender-a"), pass(catcher.smtpUrl, "sender-b")]);
    expect(first.sent + second.sent).toBe(3);
    expect(await inboxOf(catcher.inboxUrl, user.email)).toHaveLength(3);
  });

  it("a sender that stopped mid-send leaves the message unknown, never sent a second time", async () => {
    const user = await scratchUser(0);
    await scratchTopup(user.id, 700);
    await onlyDue(user.id);
    // A sender takes the row with a lease of 1 ms and then "dies" (never settles).
    const [taken] = await takeDueMail(scratch, { workerId: "lost-sender", limit: 1, leaseMs: 1 });
    expect(taken?.userId).toBe(user.id);
    await scratch.query(`SELECT pg_sleep(0.01)`);
    const next = await pass(catcher.smtpUrl);
    expect(next.expired).toBeGreaterThanOrEqual(1);
    expect((await outboxRows(user.id))[0]).toMatchObject({ status: "unknown" });
    await onlyDue(user.id);
    expect((await pass(catcher.smtpUrl)).sent).toBe(0);
    expect(await inboxOf(catcher.inboxUrl, user.email)).toEqual([]);
    // The lost sender's own late word still settles it (same fencing token): it was in fact sent.
    expect(await settleMail(scratch, taken!, { kind: "sent" })).toBe(true);
    expect((await outboxRows(user.id))[0]).toMatchObject({ status: "sent" });
  });

  it("a stale sender cannot settle a row taken again since (fencing token)", async () => {
    const user = await scratchUser(0);
    await scratchTopup(user.id, 800);
    await onlyDue(user.id);
    const [first] = await takeDueMail(scratch, { workerId: "first", limit: 1, leaseMs: 60_000 });
    expect(await settleMail(scratch, first!, { kind: "retry", error: "test", retryAt: new Date(0) })).toBe(true);
    await onlyDue(user.id);
    const [second] = await takeDueMail(scratch, { workerId: "second", limit: 1, leaseMs: 60_000 });
    expect(second?.fencingToken).toBe(first!.fencingToken + 1);
    expect(await settleMail(scratch, first!, { kind: "sent" })).toBe(false);
    expect((await outboxRows(user.id))[0]).toMatchObject({ status: "sending" });
    expect(await settleMail(scratch, second!, { kind: "failed", error: "test" })).toBe(true);
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
