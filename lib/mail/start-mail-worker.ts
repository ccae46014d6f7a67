/**
 * The process's mail sender (docs/decisions/054-mail-outbox.md): started by instrumentation.ts in every app server
 * whose MAIL_DELIVERY is `smtp`, it runs a delivery pass every MAIL_POLL_MS (at once again when a pass found a full
 * batch). Several app processes may each run one: the outbox's lease and fencing token keep each message to one
 * sender. A pass that fails (database down) is logged and the next one runs on schedule.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { pool } from "../db";
import { env } from "../env";
import { log } from "../log";
import { deliverDueMail, MAIL_BATCH_MAX } from "./deliver-due-mail";
import { smtpTransport } from "./smtp-transport";

/**
 * Starts the sender when this process should send mail.
 * @returns `stop` (cancels the next pass and resolves when a pass in progress has ended), or null when MAIL_DELIVERY
 *   is `off` or SMTP_URL is unset (a development server then leaves its mail queued, and says so once).
 * @throws nothing: settings were validated at start (lib/env.ts `mailProblems`).
 */
export function startMailWorker(): (() => Promise<void>) | null {
  const { MAIL_DELIVERY, SMTP_URL, MAIL_FROM, MAIL_POLL_MS } = env();
  if (MAIL_DELIVERY === "off") return null;
  if (!SMTP_URL) {
    log().info("SMTP_URL is not set: mail stays queued in the outbox until a process with SMTP_URL sends it");
    return null;
  }
  const transport = smtpTransport(SMTP_URL);
  const workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | null = null;

  const runPass = async (): Promise<number> => {
    try {
      const result = await deliverDueMail(pool(), { transport, from: MAIL_FROM, workerId });
      return result.sent + result.retry + result.failed + result.unknown + result.superseded;
    } catch (error) {
      log().error({ err: error }, "mail pass failed");
      return 0;
    }
  };
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      current = runPass().then((handled) => {
        current = null;
        schedule(handled >= MAIL_BATCH_MAX ? 0 : MAIL_POLL_MS);
      });
    }, delayMs);
    timer.unref();
  };
  schedule(0);
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await current;
    transport.close();
  };
}
