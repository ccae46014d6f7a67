/**
 * The SMTP transport (nodemailer, a well-kept library) for SMTP_URL, with bounded waits so that a mail server that
 * hangs cannot hold a sender past its lease (lib/mail/deliver-due-mail.ts `MAIL_LEASE_MS`).
 */
import { createTransport, type Transporter } from "nodemailer";

/** Waits, in ms: to connect, for the server's greeting, and of silence on an open connection. */
export const SMTP_TIMEOUTS_MS = { connection: 10_000, greeting: 10_000, socket: 30_000 } as const;

/**
 * A transport for `smtpUrl` (`smtp://user:password@host:port`, STARTTLS when offered; `smtps://` for implicit TLS).
 * Opens no connection until the first message. Throws on a URL nodemailer cannot read.
 */
export function smtpTransport(smtpUrl: string): Transporter {
  return createTransport({
    url: smtpUrl,
    connectionTimeout: SMTP_TIMEOUTS_MS.connection,
    greetingTimeout: SMTP_TIMEOUTS_MS.greeting,
    socketTimeout: SMTP_TIMEOUTS_MS.socket,
  });
}
