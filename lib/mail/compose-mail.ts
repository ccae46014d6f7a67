/**
 * Turns a taken outbox row into the message to send (docs/decisions/054-mail-outbox.md): reads the recipient and,
 * for a receipt, its ledger entry at sending time (the row names them; it never copies an amount), picks the
 * template and renders it to HTML and plain text with React Email.
 */
import { render } from "@react-email/render";
import { createElement, type ReactElement } from "react";
import { env } from "../env";
import type { LedgerType } from "../ledger";
import { readableReference } from "../wallet/readable-reference";
import type { MailDb } from "./mail-db";
import { formatMoney } from "../money";
import { ADDRESS_CHECK_VALID_HOURS, PASSWORD_RESET_VALID_MINUTES } from "./account-mail";
import type { TakenMail } from "./outbox";
import {
  AddressCheckMail,
  NewDeviceMail,
  PasswordChangedMail,
  PasswordResetMail,
  ReceiptMail,
  type ReceiptLine,
  utcTime,
} from "./templates";

/** A message ready for SMTP. */
export interface ComposedMail {
  readonly to: string;
  readonly subject: string;
  readonly html: string;
  readonly text: string;
}

/** The row cannot become a message (its user or entry is gone, or its payload is not what its kind needs). */
export class MailNotComposable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MailNotComposable";
  }
}

/** The entry columns a receipt reads. */
export interface ReceiptEntry {
  id: number;
  type: LedgerType;
  ref_id: string;
  amount_minor: number;
  currency: string;
  params: Record<string, unknown>;
  updated_at: Date;
}

/** A text parameter of the entry (a payee, a note, a transfer's other party, a destination), or null. */
function textParam(entry: ReceiptEntry, name: string): string | null {
  const value = entry.params[name];
  return typeof value === "string" ? value : null;
}

/** The receipt's title, what it was, and who or where the money went to or came from (contract sections 4, 14, 15). */
function whatOf(entry: ReceiptEntry, amount: string): { title: string; label: string; party: ReceiptLine | null } {
  const payee = textParam(entry, "payee");
  switch (entry.type) {
    case "topup":
      return { title: `Top-up of ${amount} received`, label: "Top-up from your card", party: null };
    case "payment":
      return {
        title: `Payment of ${amount}${payee ? ` to ${payee}` : ""}`,
        label: "Payment from your wallet",
        party: payee ? { label: "To", value: payee } : null,
      };
    case "payout": {
      // Never the whole account number: its last four digits, as the wallet page shows it.
      const account = `the account ending ${(textParam(entry, "destination") ?? "").slice(-4)}`;
      return {
        title: `Withdrawal of ${amount} paid`,
        label: "Withdrawal to your bank account",
        party: { label: "To", value: account },
      };
    }
    case "transfer": {
      const to = textParam(entry, "to");
      return {
        title: `You sent ${amount}${to ? ` to ${to}` : ""}`,
        label: "Money sent from your wallet",
        party: to ? { label: "To", value: to } : null,
      };
    }
    case "transfer_in": {
      const from = textParam(entry, "from");
      return {
        title: `${from ?? "Someone"} sent you ${amount}`,
        label: "Money received in your wallet",
        party: from ? { label: "From", value: from } : null,
      };
    }
    // An admin's reversal of a transfer (contract section 15.1): the money back to the sender, taken from the recipient.
    case "transfer_reversal":
      return {
        title: `A transfer you sent was reversed: ${amount} is back in your wallet`,
        label: "Transfer reversed by the wallet's staff",
        party: null,
      };
    case "transfer_reversal_out":
      return {
        title: `A transfer you received was reversed: ${amount} was taken back`,
        label: "Transfer reversed by the wallet's staff",
        party: null,
      };
    case "refund":
      return { title: `Refund of ${amount} to your card`, label: "Refund of a top-up", party: null };
    default:
      // No trigger queues a receipt for another type; were one added, its receipt says at least what moved.
      return { title: `Movement of ${amount} in your wallet`, label: "Movement of your wallet", party: null };
  }
}

/**
 * A receipt's title and lines for a succeeded `entry` (a top-up, payment, refund, payout, transfer sent or received,
 * either side of a transfer's reversal: the types the receipt triggers queue). Pure: what the entry's row says at sending time.
 */
export function receiptOf(entry: ReceiptEntry): { title: string; lines: ReceiptLine[] } {
  const amount = formatMoney(entry.amount_minor, entry.currency);
  const note = textParam(entry, "note");
  const reason = textParam(entry, "reason");
  const what = whatOf(entry, amount);
  const lines: ReceiptLine[] = [
    { label: "What", value: what.label },
    { label: "Amount", value: amount },
    ...(what.party ? [what.party] : []),
    ...(note ? [{ label: "Note", value: note }] : []),
    ...(reason ? [{ label: "Why", value: reason }] : []),
    { label: "Reference", value: readableReference(entry.type, entry.id) },
    { label: "Full reference", value: entry.ref_id },
    { label: "When", value: utcTime(entry.updated_at) },
    { label: "Status", value: "Succeeded" },
  ];
  return { title: what.title, lines };
}

function payloadUrl(mail: TakenMail): string {
  const url = mail.payload?.url;
  if (typeof url !== "string" || !url.startsWith(env().APP_URL)) {
    throw new MailNotComposable(`${mail.kind} row ${mail.id} has no link to this app`);
  }
  return url;
}

async function templateOf(db: MailDb, mail: TakenMail, email: string): Promise<[string, ReactElement]> {
  const resetUrl = `${env().APP_URL}/forgot-password`;
  const at = typeof mail.payload?.at === "string" ? new Date(mail.payload.at) : new Date();
  switch (mail.kind) {
    case "address_check":
      return [
        "Confirm your email address",
        createElement(AddressCheckMail, { email, url: payloadUrl(mail), validHours: ADDRESS_CHECK_VALID_HOURS }),
      ];
    case "password_reset":
      return [
        "Reset your wallet password",
        createElement(PasswordResetMail, { url: payloadUrl(mail), validMinutes: PASSWORD_RESET_VALID_MINUTES }),
      ];
    case "password_changed":
      return [
        "Your wallet password was changed",
        createElement(PasswordChangedMail, { at, how: mail.payload?.how === "reset" ? "reset" : "changed", resetUrl }),
      ];
    case "new_device": {
      const device = typeof mail.payload?.device === "string" ? mail.payload.device : "an unnamed browser";
      return ["A new sign-in to your wallet", createElement(NewDeviceMail, { at, device, resetUrl })];
    }
    case "receipt": {
      const { rows } = await db.query<ReceiptEntry>(
        `SELECT id, type, ref_id, amount_minor, currency, params, updated_at FROM ledger_entries
          WHERE user_id = $1 AND id = $2 AND status = 'succeeded'`,
        [mail.userId, mail.entryId],
      );
      const entry = rows[0];
      if (!entry) throw new MailNotComposable(`receipt row ${mail.id}: entry ${mail.entryId} is not a succeeded entry`);
      const receipt = receiptOf(entry);
      const pageUrl = `${env().APP_URL}/wallet/movements/${readableReference(entry.type, entry.id)}`;
      return [receipt.title, createElement(ReceiptMail, { ...receipt, walletUrl: pageUrl })];
    }
  }
}

/**
 * The message for `mail`, rendered.
 * @returns the recipient's current address, the subject, HTML and plain text.
 * @throws {@link MailNotComposable} when the user or the entry is gone or the payload lacks what the kind needs
 *   (the row is then `failed`: trying again cannot help); database errors.
 */
export async function composeMail(db: MailDb, mail: TakenMail): Promise<ComposedMail> {
  const { rows } = await db.query<{ email: string }>(`SELECT email FROM "user" WHERE id = $1`, [mail.userId]);
  const email = rows[0]?.email;
  if (!email) throw new MailNotComposable(`${mail.kind} row ${mail.id}: user ${mail.userId} is gone`);
  const [subject, element] = await templateOf(db, mail, email);
  const [html, text] = await Promise.all([render(element), render(element, { plainText: true })]);
  return { to: email, subject, html, text };
}
