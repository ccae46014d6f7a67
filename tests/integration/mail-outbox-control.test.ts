/**
 * Negative controls of the outbox's guards (docs/decisions/054-mail-outbox.md), kept runnable: the scenarios of
 * tests/integration/mail-outbox.test.ts (tests/integration/mail-fixtures.ts) run with one guard removed each, and
 * fail, which is the evidence that they bite.
 * - the receipt trigger's function without its INSERT (rewritten from prisma/functions/mail_queue_receipt.sql on this
 *   file's scratch database): no receipt is queued;
 * - a lost sender's lease expiry making the row `pending` instead of `unknown` (vi.mock of lib/mail/outbox.ts): the
 *   message is sent a second time;
 * - settling without the fencing compare (the row's current token used whatever the caller held): a stale sender
 *   settles a row taken again since.
 * Run alone: `npx vitest run --project integration tests/integration/mail-outbox-control.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const control = vi.hoisted(() => ({ expiryToPending: false, fencingRemoved: false }));

vi.mock("../../lib/mail/outbox", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/mail/outbox")>();
  return {
    ...actual,
    expireMailLeases: async (db: Parameters<typeof actual.expireMailLeases>[0]) => {
      if (!control.expiryToPending) return actual.expireMailLeases(db);
      const { rowCount } = await db.query(
        `UPDATE mail_outbox SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
          WHERE status = 'sending' AND lease_expires_at < now()`,
      );
      return rowCount ?? 0;
    },
    settleMail: async (...args: Parameters<typeof actual.settleMail>) => {
      const [db, mail, settlement] = args;
      if (!control.fencingRemoved) return actual.settleMail(db, mail, settlement);
      const { rows } = await db.query<{ fencing_token: number }>(
        `SELECT fencing_token FROM mail_outbox WHERE id = $1`,
        [mail.id],
      );
      return actual.settleMail(db, { ...mail, fencingToken: rows[0]!.fencing_token }, settlement);
    },
  };
});

import { functionDefinition } from "../helpers/function-files";
import {
  lostSenderScenario,
  type MailScratch,
  receiptQueuedScenario,
  staleTokenScenario,
  startMailScratch,
} from "./mail-fixtures";

let scratch: MailScratch;
beforeAll(async () => {
  scratch = await startMailScratch();
}, 120_000);
afterAll(async () => {
  await scratch?.stop();
});

describe("each outbox guard, removed, fails its scenario", () => {
  it("with the guards in place the scenarios pass (the controls below are not failing for another reason)", async () => {
    await receiptQueuedScenario(scratch);
    await lostSenderScenario(scratch);
    await staleTokenScenario(scratch);
  });

  it("the receipt trigger without its INSERT: no receipt", async () => {
    const original = functionDefinition("mail_queue_receipt");
    const broken = original.replace(/INSERT INTO mail_outbox[\s\S]*?DO NOTHING;/, "NULL;");
    expect(broken).not.toBe(original);
    await scratch.db.query(broken);
    try {
      await expect(receiptQueuedScenario(scratch)).rejects.toThrow();
    } finally {
      await scratch.db.query(original);
    }
  });

  it("a lost sender's row made pending instead of unknown: sent a second time", async () => {
    control.expiryToPending = true;
    try {
      await expect(lostSenderScenario(scratch)).rejects.toThrow();
    } finally {
      control.expiryToPending = false;
    }
  });

  it("settling without the fencing compare: a stale sender settles the row", async () => {
    control.fencingRemoved = true;
    try {
      await expect(staleTokenScenario(scratch)).rejects.toThrow();
    } finally {
      control.fencingRemoved = false;
    }
  });
});
