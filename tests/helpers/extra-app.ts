/**
 * Another `next start` of the current build, for tests that need an app process of their own (to kill it,
 * point it at their own bank, or show that replays come from PostgreSQL), against the test stack's database
 * and Redis. Logs go to reports/stack-logs/<name>.log.
 */
import { join } from "node:path";
import { waitForHttp } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { randomAuthSecret } from "../../scripts/lib/secrets";
import { projectRoot, spawnApp } from "../../scripts/lib/stack";
import { testStack } from "./stack";

export interface ExtraAppOptions {
  /** Log prefix and file name. */
  name: string;
  /** Port on 127.0.0.1. */
  port: number;
  /** The bank this app calls. */
  bankUrl: string;
  /** More environment (e.g. `BANK_TIMEOUT_MS`), applied last. */
  env?: Record<string, string>;
}

/** Starts the app and resolves once `GET /api/v1/health` answers 200 (at most 60 s). */
export async function startExtraApp(options: ExtraAppOptions): Promise<Service> {
  const stack = testStack();
  const appUrl = `http://127.0.0.1:${options.port}`;
  const app = spawnApp({
    name: options.name,
    port: options.port,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      BANK_URL: options.bankUrl,
      APP_URL: appUrl,
      BANK_WEBHOOK_SECRETS: stack.webhookSecrets,
      // A fresh session secret per app (case C16): these apps are reached with API tokens, never with cookies.
      BETTER_AUTH_SECRET: randomAuthSecret(),
      // Mail through the stack's catcher when it has one; the outbox's leases keep each message to one sender.
      ...(stack.smtpUrl ? { SMTP_URL: stack.smtpUrl } : { MAIL_DELIVERY: "off" }),
      ...options.env,
    },
    log: join(projectRoot, "reports", "stack-logs", `${options.name}.log`),
  });
  await waitForHttp(`${appUrl}/api/v1/health`, 60_000);
  return app;
}
