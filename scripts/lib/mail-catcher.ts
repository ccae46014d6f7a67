/**
 * A local mail catcher for `npm run demo`, `npm run dev` and the test stack: MailDev (npm `maildev`, a well-kept
 * development SMTP server with an inbox page and a REST API) on two loopback ports, keeping its mail in a folder of
 * the caller's. The app sends to `smtpUrl`; people read `inboxUrl`; tests read `${inboxUrl}/email`.
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
  /** `http://127.0.0.1:<port>`: the inbox page, and its REST API under `/email`. */
  readonly inboxUrl: string;
}

/**
 * Starts MailDev on free loopback ports (or the given ones) and resolves once its API answers.
 * @param options.mailDir where it keeps messages (created; never shared between catchers). MailDev keeps every
 *   message in memory too: a test run's few thousand are a few MB.
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
      join(projectRoot, "node_modules", "maildev", "bin", "maildev"),
      ...["--smtp", String(smtpPort), "--web", String(webPort), "--ip", "127.0.0.1", "--web-ip", "127.0.0.1"],
      ...["--mail-directory", options.mailDir, "--silent"],
    ],
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    log: options.log,
  });
  const inboxUrl = `http://127.0.0.1:${webPort}`;
  await waitForService(service, `${inboxUrl}/email`, {});
  return { service, smtpUrl: `smtp://127.0.0.1:${smtpPort}`, inboxUrl };
}
