/**
 * A local mail catcher for `npm run demo`, `npm run dev` and the test stack: MailDev (npm `maildev`, a well-kept
 * development SMTP server with an inbox page and a REST API) on two loopback ports, keeping its mail in a folder of
 * the caller's. The app sends to `smtpUrl`; people read `inboxUrl`; tests read `${inboxUrl}/api/email`.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports";
import { spawnService, type Service } from "./processes";
import { projectRoot, waitForService } from "./stack";

/** A running catcher. */
export interface MailCatcher {
  readonly service: Service;
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  readonly smtpUrl: string;
  /** `http://127.0.0.1:<port>`: the inbox page, and its REST API under `/api/email`. */
  readonly inboxUrl: string;
}

/**
 * Messages the catcher keeps, newest first: a test run sends a few thousand; older ones are dropped with their files.
 */
const KEPT_MESSAGES_MAX = 5_000;

/**
 * Starts MailDev on free loopback ports (or the given ones) and resolves once its API answers.
 * @param options.mailDir where it keeps messages (created; never shared between catchers: MailDev trims its folder).
 * @param options.log a file for its output, or "inherit".
 * @throws Error with the end of its output when it exits or does not answer within 60 s.
 */
export async function startMailCatcher(options: {
  mailDir: string;
  log?: string;
  smtpPort?: number;
  webPort?: number;
}): Promise<MailCatcher> {
  mkdirSync(options.mailDir, { recursive: true });
  const [smtpPort, webPort] = await Promise.all([options.smtpPort ?? freePort(), options.webPort ?? freePort()]);
  const service = spawnService({
    name: "mail",
    command: process.execPath,
    args: [
      join(projectRoot, "node_modules", "maildev", "dist", "bin", "maildev.js"),
      ...["--smtp", String(smtpPort), "--web", String(webPort), "--ip", "127.0.0.1", "--web-ip", "127.0.0.1"],
      ...["--mail-directory", options.mailDir, "--max-emails", String(KEPT_MESSAGES_MAX), "--silent"],
    ],
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    log: options.log,
  });
  const inboxUrl = `http://127.0.0.1:${webPort}`;
  await waitForService(service, `${inboxUrl}/api/email`, {});
  return { service, smtpUrl: `smtp://127.0.0.1:${smtpPort}`, inboxUrl };
}
