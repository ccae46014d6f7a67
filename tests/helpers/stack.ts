/**
 * The running test stack, as seen from a test file of the `integration` or `http` project
 * (started or reused by tests/setup/global-setup.ts).
 */
import { inject } from "vitest";
import { parseTestStack, type TestStackInfo } from "../../scripts/lib/stack";

/**
 * Returns `{ databaseUrl, redisUrl, redisPid, appUrl, bankUrl, webhookSecrets }` of the stack: from vitest's
 * `inject("testStack")`, or from the `TEST_STACK` environment variable the global setup exports.
 * Throws when neither is there (the file is not running under a project with the global setup).
 */
export function testStack(): TestStackInfo {
  let info: TestStackInfo | null | undefined;
  try {
    info = inject("testStack");
  } catch {
    info = undefined;
  }
  info ??= parseTestStack(process.env.TEST_STACK);
  if (!info) {
    throw new Error("no test stack: run this file under the vitest project 'integration' or 'http' (global setup)");
  }
  return info;
}

/** The app's base URL (`http://127.0.0.1:<port>`). Throws when the stack was started without the app. */
export function appUrl(): string {
  const { appUrl: url } = testStack();
  if (!url) throw new Error("the test stack has no app: run this file under the 'http' project");
  return url;
}

/** The sandbox bank's base URL. Throws when the stack was started without the app and bank. */
export function bankUrl(): string {
  const { bankUrl: url } = testStack();
  if (!url) throw new Error("the test stack has no bank: run this file under the 'http' project");
  return url;
}
