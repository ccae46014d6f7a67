/**
 * Playwright global setup: reuse the stack in `TEST_STACK` (as `npm test` provides), or build the app when its
 * sources changed and start a stack with the app (scripts/lib/stack.ts), exporting it as `TEST_STACK` so that
 * playwright.config.ts (re-read by each worker) points `baseURL` at it. Returns the teardown that stops what
 * was started here.
 */
import { assertLocalDatabase, ensureBuilt, parseTestStack, startStack, testStackJson } from "../scripts/lib/stack";

export default async function globalSetup(): Promise<() => Promise<void>> {
  const reused = parseTestStack(process.env.TEST_STACK);
  if (reused) {
    if (!reused.appUrl) throw new Error("TEST_STACK has no appUrl: the browser tests need a stack with the app");
    assertLocalDatabase(reused.databaseUrl);
    return async () => {};
  }
  ensureBuilt();
  const stack = await startStack({ withApp: true, label: "playwright" });
  try {
    assertLocalDatabase(stack.databaseUrl);
  } catch (error) {
    await stack.stop();
    throw error;
  }
  process.env.TEST_STACK = testStackJson(stack);
  process.env.DATABASE_URL = stack.databaseUrl;
  process.env.REDIS_URL = stack.redisUrl;
  return async () => {
    await stack.stop();
  };
}
