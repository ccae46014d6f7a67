/**
 * Replays come from PostgreSQL, not from a process's memory (contract section 3: "across processes and
 * restarts"): a response produced by one app process is replayed byte for byte by a freshly started one.
 */
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { api, createApiUser } from "../helpers/http";
import { testStack } from "../helpers/stack";
import { freshRefId, seedBalance } from "../helpers/ledger";

let second: Service | null = null;
afterAll(async () => {
  await second?.stop();
});

/** Starts another app process on a free port, against the same PostgreSQL, Redis and bank. */
async function startSecondApp(): Promise<string> {
  const port = await freePort();
  second = await startExtraApp({ name: "replay-app-2", port, bankUrl: testStack().bankUrl! });
  return `http://127.0.0.1:${port}`;
}

/** Each request gets its own bound, so a hang names its step instead of running into the test's time limit. */
const REQUEST_TIMEOUT_MS = 30_000;

describe("replay across processes", () => {
  it("a payment and a top-up answered by one process replay byte for byte from a freshly started one", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 500);
    const orderId = freshRefId("order");
    const refId = freshRefId("topup");
    const paid = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 120 } });
    const topped = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 80 } });
    expect(paid.status).toBe(201);
    expect(topped.status).toBe(201);

    const otherUrl = await startSecondApp();
    const send = (path: string, body: unknown) =>
      fetch(`${otherUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      }).catch((error: unknown) => {
        throw new Error(`POST ${path} to the second app gave no answer within ${REQUEST_TIMEOUT_MS} ms`, {
          cause: error,
        });
      });
    const paidAgain = await send("/api/v1/payments", { orderId, amount: 120 });
    const toppedAgain = await send("/api/v1/topups", { refId, amount: 80 });
    expect(paidAgain.status).toBe(201);
    expect(await paidAgain.text()).toBe(paid.text);
    expect(paidAgain.headers.get("idempotent-replayed")).toBe("true");
    expect(toppedAgain.status).toBe(201);
    expect(await toppedAgain.text()).toBe(topped.text);
  }, 180_000);
});
