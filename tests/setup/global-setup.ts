/**
 * Vitest globalSetup of the `integration` and `http` projects (vitest.config.ts).
 *
 * - `TEST_STACK` set (JSON `{ databaseUrl, redisUrl, redisPid, appUrl, bankUrl }`, as `npm test` does): that
 *   stack is reused and nothing is started or stopped here.
 * - Otherwise the project starts its own stack (scripts/lib/stack.ts): embedded PostgreSQL in a fresh temporary
 *   data folder plus redis-server on free ports, migrated; the `http` project also builds the app when its
 *   sources changed and starts the sandbox bank and the app. Teardown stops what was started.
 *
 * Test files reach the stack through `process.env` (`DATABASE_URL`, `REDIS_URL`, `REDIS_PID`, `APP_URL`,
 * `BANK_URL`, `BANK_WEBHOOK_SECRETS`, `TEST_STACK`), which vitest's workers inherit because they are forked after
 * global setup, and through `inject("testStack")` (tests/helpers/stack.ts wraps both). lib/env.ts therefore
 * sees the test database and Redis without any test code passing them around.
 *
 * Refuses to run when the database is not on this machine (tests write users and create databases).
 */
import type { TestProject } from "vitest/node";
import {
  assertLocalDatabase,
  ensureBuilt,
  parseTestStack,
  startStack,
  testStackJson,
  type Stack,
  type TestStackInfo,
} from "../../scripts/lib/stack";

declare module "vitest" {
  export interface ProvidedContext {
    testStack: TestStackInfo;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const withApp = project.name === "http";
  let started: Stack | null = null;
  let info = parseTestStack(process.env.TEST_STACK);

  if (info) {
    if (withApp && (!info.appUrl || !info.bankUrl)) {
      throw new Error("TEST_STACK has no appUrl/bankUrl, but the http project needs the app: start it with the app");
    }
  } else {
    if (withApp) ensureBuilt();
    started = await startStack({ withApp, label: `vitest-${project.name || "default"}` });
    info = started;
  }
  try {
    assertLocalDatabase(info.databaseUrl);
    exportStack(project, info);
  } catch (error) {
    await started?.stop();
    throw error;
  }

  return async () => {
    await started?.stop();
  };
}

/** Makes the stack visible to test files: environment variables (inherited by workers) and `inject`. */
function exportStack(project: TestProject, stack: TestStackInfo): void {
  // A plain, serialisable copy: `provide` refuses functions such as Stack.stop.
  const info = parseTestStack(testStackJson(stack))!;
  const exported: Record<string, string> = {
    TEST_STACK: testStackJson(info),
    DATABASE_URL: info.databaseUrl,
    REDIS_URL: info.redisUrl,
    REDIS_PID: String(info.redisPid),
  };
  if (info.appUrl) exported.APP_URL = info.appUrl;
  if (info.bankUrl) exported.BANK_URL = info.bankUrl;
  if (info.webhookSecrets) exported.BANK_WEBHOOK_SECRETS = info.webhookSecrets;
  Object.assign(process.env, exported);
  project.provide("testStack", info);
}
