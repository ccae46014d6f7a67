/**
 * One delivery pass over the outbox (docs/decisions/054-mail-outbox.md): rows whose sender was lost become
 * `unknown`, then due rows are taken (leased, fenced), composed, handed to SMTP one by one and settled by what the
 * server said. A mail server that is down leaves every row `pending` for a later pass; no money is read or written
 * here beyond reading an entry for its receipt.
 */
import type { Transporter } from "nodemailer";
import type { MailDb } from "./mail-db";
import { log } from "../log";
import { composeMail, MailNotComposable } from "./compose-mail";
import { expireMailLeases, type MailSettlement, settleMail, type TakenMail, takeDueMail } from "./outbox";
import { classifySmtpFailure, MAIL_ATTEMPTS_MAX, retryDelayMs } from "./smtp-outcome";

/** What one pass did, by outcome. */
export interface MailPassResult {
  sent: number;
  retry: number;
  failed: number;
  unknown: number;
  /** Rows whose lease had run out, made `unknown` at the start of the pass. */
  expired: number;
  /** Rows another attempt settled first (this pass's lease was lost): nothing written. */
  superseded: number;
}

/** Rows taken per pass: a pass sends at most this many messages, one after another. */
export const MAIL_BATCH_MAX = 20;
/**
 * A sender's lease on a row, in ms: longer than the transport's three timeouts together (./smtp-transport.ts: 10 s
 * to connect, 10 s for the greeting, 30 s of silence on the socket), so a live sender always settles in time.
 */
export const MAIL_LEASE_MS = 120_000;

function settlementOf(error: unknown, mail: TakenMail): MailSettlement {
  const text = error instanceof Error ? error.message : String(error);
  if (error instanceof MailNotComposable) return { kind: "failed", error: text };
  const failure = classifySmtpFailure(error);
  if (failure === "refused") return { kind: "failed", error: text };
  if (failure === "maybe_accepted") return { kind: "unknown", error: text };
  if (mail.attempts >= MAIL_ATTEMPTS_MAX) return { kind: "failed", error: `gave up after ${mail.attempts}: ${text}` };
  return { kind: "retry", error: text, retryAt: new Date(Date.now() + retryDelayMs(mail.attempts)) };
}

async function sendOne(db: MailDb, transport: Transporter, from: string, mail: TakenMail): Promise<MailSettlement> {
  try {
    const message = await composeMail(db, mail);
    await transport.sendMail({
      from,
      to: message.to,
      subject: message.subject,
      html: message.html,
      text: message.text,
      // One Message-ID per event: a reader's mail client shows a copy it already has once (RFC 5322 section 3.6.4).
      messageId: `<${mail.eventKey.replace(/[^A-Za-z0-9.-]/g, ".")}.${mail.id}@wallet.outbox>`,
    });
    return { kind: "sent" };
  } catch (error) {
    return settlementOf(error, mail);
  }
}

/**
 * Runs one pass: expires lost leases, takes up to {@link MAIL_BATCH_MAX} due rows for `workerId`, sends each through
 * `transport` from `from` and settles it.
 * @returns the counts of the pass.
 * @throws database errors (the pass stops; rows it had taken stay leased until their lease runs out, then `unknown`
 *   if they were being sent, which the admin page lists).
 */
export async function deliverDueMail(
  db: MailDb,
  options: { transport: Transporter; from: string; workerId: string },
): Promise<MailPassResult> {
  const result: MailPassResult = { sent: 0, retry: 0, failed: 0, unknown: 0, expired: 0, superseded: 0 };
  result.expired = await expireMailLeases(db);
  const taken = await takeDueMail(db, { workerId: options.workerId, limit: MAIL_BATCH_MAX, leaseMs: MAIL_LEASE_MS });
  for (const mail of taken) {
    const settlement = await sendOne(db, options.transport, options.from, mail);
    if (!(await settleMail(db, mail, settlement))) {
      result.superseded += 1;
      continue;
    }
    result[settlement.kind] += 1;
    if (settlement.kind !== "sent") {
      log().warn(
        { mailId: mail.id, kind: mail.kind, outcome: settlement.kind, err: settlement.error },
        "mail not sent",
      );
    }
  }
  return result;
}
