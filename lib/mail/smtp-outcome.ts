/**
 * What a failed SMTP send means for the message (docs/decisions/054-mail-outbox.md): was it certainly not accepted
 * (safe to send again), refused for good, or possibly accepted (never sent again: a message goes out at most once)?
 * Read from the error's fields that nodemailer sets (`responseCode`, `command`, `code`, `originalCode`), never from
 * its message text.
 */

/** How a send that threw ended, for the outbox. */
export type SmtpFailure = "not_accepted" | "refused" | "maybe_accepted";

/**
 * The SMTP commands that come before the message's content is handed over (RFC 5321 section 3.3: the content is
 * accepted only by the reply to the end of DATA). An error in one of them means the server has no message.
 */
const BEFORE_CONTENT_COMMANDS = /^(CONN|EHLO|HELO|LHLO|STARTTLS|AUTH\b.*|MAIL FROM|RCPT TO)$/;

/** Socket errors that mean no connection was ever made (so nothing was sent). */
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/** nodemailer codes of failures before the content is sent: name lookup, TLS, authentication, the envelope. */
const BEFORE_CONTENT_CODES = new Set(["EDNS", "ETLS", "EAUTH", "ENOAUTH", "EPROXY", "EREQUIRETLS"]);

/**
 * Classifies an error thrown by a nodemailer SMTP send.
 *
 * @param error anything thrown; fields read: `responseCode` (number), `command`, `code`, `originalCode` (strings).
 * @returns `refused` for a 5xx reply (RFC 5321 section 4.2.1: permanent); `not_accepted` for a 4xx reply (temporary:
 *   the server kept nothing), for a failure in a command before the content, or when no connection was made;
 *   `maybe_accepted` for everything else (a connection that broke or timed out once the content may have been sent,
 *   and any error this cannot read), because the only safe answer to "was it delivered?" then is "perhaps".
 */
export function classifySmtpFailure(error: unknown): SmtpFailure {
  if (typeof error !== "object" || error === null) return "maybe_accepted";
  const fields = error as { responseCode?: unknown; command?: unknown; code?: unknown; originalCode?: unknown };
  const responseCode = typeof fields.responseCode === "number" ? fields.responseCode : null;
  if (responseCode !== null && responseCode >= 500 && responseCode < 600) return "refused";
  if (responseCode !== null && responseCode >= 400 && responseCode < 500) return "not_accepted";
  if (typeof fields.command === "string" && BEFORE_CONTENT_COMMANDS.test(fields.command)) return "not_accepted";
  if (typeof fields.originalCode === "string" && NEVER_CONNECTED.has(fields.originalCode)) return "not_accepted";
  if (typeof fields.code === "string" && BEFORE_CONTENT_CODES.has(fields.code)) return "not_accepted";
  return "maybe_accepted";
}

/**
 * When to try a message that was not accepted again, in ms after now: 5 s, doubling per attempt, at most 15
 * minutes. A mail server that is down for an hour gets about a dozen tries per message, not thousands.
 * @param attempts sending attempts made so far (1 after the first).
 */
export function retryDelayMs(attempts: number): number {
  return Math.min(5_000 * 2 ** Math.max(0, attempts - 1), 15 * 60_000);
}

/**
 * After this many attempts a message that was never accepted is given up (`failed`): with {@link retryDelayMs},
 * about 24 hours of a mail server that does not answer.
 */
export const MAIL_ATTEMPTS_MAX = 100;
