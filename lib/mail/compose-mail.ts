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

interface ReceiptEntry {
  id: number;
  type: LedgerType;
  ref_id: string;
  amount_minor: number;
  currency: string;
  params: Record<string, unknown>;
  updated_at: Date;
}

function receiptOf(entry: ReceiptEntry): { title: string; lines: ReceiptLine[] } {
  const amount = formatMoney(entry.amount_minor, entry.currency);
  const payee = typeof entry.params.payee === "string" ? entry.params.payee : null;
  const note = typeof entry.params.note === "string" ? entry.params.note : null;
  const what =
    entry.type === "topup"
      ? { title: `Top-up of ${amount} received`, label: "Top-up from your card" }
      : entry.type === "payment"
        ? { title: `Payment of ${amount}${payee ? ` to ${payee}` : ""}`, label: "Payment from your wallet" }
        : { title: `Refund of ${amount} to your card`, label: "Refund of a top-up" };
  const lines: ReceiptLine[] = [
    { label: "What", value: what.label },
    { label: "Amount", value: amount },
    ...(payee ? [{ label: "To", value: payee }] : []),
    ...(note ? [{ label: "Note", value: note }] : []),
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
