/**
 * The outbox's delivery scenarios (docs/decisions/054-mail-outbox.md), shared by tests/integration/mail-outbox.test.ts
 * (they pass) and tests/integration/mail-outbox-control.test.ts (they fail with a guard removed). Each runs on a
 * scratch database of its own and a real MailDev: the test stack's app sends the stack's outbox all the time (its own
 * mail worker) and would take these rows.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTransport } from "nodemailer";
import pg from "pg";
import { expect } from "vitest";
import { migrate } from "../../lib/migrate";
import { deliverDueMail } from "../../lib/mail/deliver-due-mail";
import { settleMail, takeDueMail } from "../../lib/mail/outbox";
import { startMailCatcher, type MailCatcher } from "../../scripts/lib/mail-catcher";
import { freePort } from "../../scripts/lib/ports";
import { createScratchDatabase, dropScratchDatabases } from "../helpers/db";

/** A scratch database, migrated, and a mail catcher; `stop` ends both. */
export interface MailScratch {
  readonly db: pg.Pool;
  readonly catcher: MailCatcher;
  stop(): Promise<void>;
}

/** Starts a {@link MailScratch}. */
export async function startMailScratch(): Promise<MailScratch> {
  const mailDir = mkdtempSync(join(tmpdir(), "mail-outbox-test-"));
  const url = await createScratchDatabase("mail_outbox");
  await migrate(url);
  const db = new pg.Pool({ connectionString: url, max: 4 });
  const catcher = await startMailCatcher({ mailDir });
  return {
    db,
    catcher,
    stop: async () => {
      await db.end();
      await dropScratchDatabases();
      await catcher.service.stop();
      rmSync(mailDir, { recursive: true, force: true });
    },
  };
}

/** A user of the scratch database, with a wallet holding `balanceMinor`. */
export async function scratchUser(s: MailScratch, balanceMinor = 0): Promise<{ id: string; email: string }> {
  const id = `mail_${randomUUID().replaceAll("-", "")}`;
  const email = `${id}@example.test`;
  await s.db.query(`INSERT INTO "user" (id, name, email) VALUES ($1, 'Mail Test', $2)`, [id, email]);
  await s.db.query(`INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, $2, 'USD')`, [id, balanceMinor]);
  return { id, email };
}

/** A top-up row born succeeded (the receipt trigger fires on it as on any door's transition). */
export async function scratchTopup(s: MailScratch, userId: string, amountMinor: number): Promise<void> {
  await s.db.query(
    `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status,
                                 response_status, response_body)
     VALUES ($1, 'topup', $2, $3, 'USD', repeat('0', 64), '{}', 'succeeded', 201, '{}')`,
    [userId, `t-${randomUUID()}`, amountMinor],
  );
}

/** The user's money as the scratch database holds it: balance and entries. */
export async function moneyOf(s: MailScratch, userId: string): Promise<unknown> {
  const { rows } = await s.db.query(
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
}

/** What the catcher holds for `address`. */
export async function inboxOf(s: MailScratch, address: string): Promise<CaughtMail[]> {
  const response = await fetch(`${s.catcher.inboxUrl}/email`);
  const all = (await response.json()) as CaughtMail[];
  return all.filter((mail) => mail.to.some((to) => to.address.toLowerCase() === address.toLowerCase()));
}

/** The user's outbox rows, oldest first, on `db`. */
export async function outboxRows(db: Pick<pg.Pool, "query">, userId: string) {
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

/** Only this user's pending rows are due: every other pending row is pushed an hour ahead. */
export async function onlyDue(s: MailScratch, userId: string): Promise<void> {
  await s.db.query(
    `UPDATE mail_outbox SET next_attempt_at = CASE WHEN user_id = $1 THEN now() - interval '1 second'
                                                   ELSE greatest(next_attempt_at, now() + interval '1 hour') END
      WHERE status = 'pending'`,
    [userId],
  );
}

/** One delivery pass through `smtpUrl` (short timeouts). */
export function pass(s: MailScratch, smtpUrl: string, workerId = `test-${randomUUID().slice(0, 8)}`) {
  return deliverDueMail(s.db, {
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

/** A mail server that is down delays mail and changes no money; mail resumes, once, when it returns. */
export async function serverDownScenario(s: MailScratch): Promise<void> {
  const user = await scratchUser(s, 4200);
  await scratchTopup(s, user.id, 4200);
  const moneyBefore = await moneyOf(s, user.id);
  // A port nothing listens on: the connection is refused, the message certainly not accepted.
  const downPort = await freePort();
  await onlyDue(s, user.id);
  expect(await pass(s, `smtp://127.0.0.1:${downPort}`)).toMatchObject({ sent: 0, retry: 1, unknown: 0, failed: 0 });
  const [waiting] = await outboxRows(s.db, user.id);
  expect(waiting).toMatchObject({ status: "pending", attempts: 1 });
  expect(waiting?.last_error).toMatch(/ECONNREFUSED/);
  expect(await moneyOf(s, user.id)).toEqual(moneyBefore);
  expect(await inboxOf(s, user.email)).toEqual([]);

  await onlyDue(s, user.id);
  expect((await pass(s, s.catcher.smtpUrl)).sent).toBe(1);
  expect((await outboxRows(s.db, user.id))[0]).toMatchObject({ status: "sent", attempts: 2 });
  const caught = await inboxOf(s, user.email);
  expect(caught.map((mail) => mail.subject)).toEqual(["Top-up of $42.00 received"]);
  expect(caught[0]?.text).toContain("$42.00");
  // The readable reference, and the link to the movement's own page in the wallet.
  expect(caught[0]?.text).toMatch(/\/wallet\/movements\/TP-[0-9A-Z]{4}-[0-9A-Z]{4}/);
  expect(await moneyOf(s, user.id)).toEqual(moneyBefore);

  await onlyDue(s, user.id);
  expect((await pass(s, s.catcher.smtpUrl)).sent).toBe(0);
  expect(await inboxOf(s, user.email)).toHaveLength(1);
}

/** A sender that stopped mid-send leaves its row `unknown`, never sent again; its own late word still settles it. */
export async function lostSenderScenario(s: MailScratch): Promise<void> {
  const user = await scratchUser(s);
  await scratchTopup(s, user.id, 700);
  await onlyDue(s, user.id);
  const [taken] = await takeDueMail(s.db, { workerId: "lost-sender", limit: 1, leaseMs: 1 });
  expect(taken?.userId).toBe(user.id);
  await s.db.query(`SELECT pg_sleep(0.01)`);
  expect((await pass(s, s.catcher.smtpUrl)).expired).toBeGreaterThanOrEqual(1);
  expect((await outboxRows(s.db, user.id))[0]).toMatchObject({ status: "unknown" });
  await onlyDue(s, user.id);
  expect((await pass(s, s.catcher.smtpUrl)).sent).toBe(0);
  expect(await inboxOf(s, user.email)).toEqual([]);
  expect(await settleMail(s.db, taken!, { kind: "sent" })).toBe(true);
  expect((await outboxRows(s.db, user.id))[0]).toMatchObject({ status: "sent" });
}

/** A stale sender cannot settle a row taken again since: only the current fencing token settles. */
export async function staleTokenScenario(s: MailScratch): Promise<void> {
  const user = await scratchUser(s);
  await scratchTopup(s, user.id, 800);
  await onlyDue(s, user.id);
  const [first] = await takeDueMail(s.db, { workerId: "first", limit: 1, leaseMs: 60_000 });
  expect(await settleMail(s.db, first!, { kind: "retry", error: "test", retryAt: new Date(0) })).toBe(true);
  await onlyDue(s, user.id);
  const [second] = await takeDueMail(s.db, { workerId: "second", limit: 1, leaseMs: 60_000 });
  expect(second?.fencingToken).toBe(first!.fencingToken + 1);
  expect(await settleMail(s.db, first!, { kind: "sent" })).toBe(false);
  expect((await outboxRows(s.db, user.id))[0]).toMatchObject({ status: "sending" });
  expect(await settleMail(s.db, second!, { kind: "failed", error: "test" })).toBe(true);
}

/** A top-up that succeeds queues exactly one receipt naming it. */
export async function receiptQueuedScenario(s: MailScratch): Promise<void> {
  const user = await scratchUser(s);
  await scratchTopup(s, user.id, 900);
  const rows = await outboxRows(s.db, user.id);
  expect(rows.map((row) => row.kind)).toEqual(["receipt"]);
}
