/**
 * C05: the bank's `charge.succeeded` webhook and the app's own completion of the same top-up arrive in the same
 * tick. The test runs its own app process (the same build, the stack's PostgreSQL and Redis) against its own
 * sandbox bank that answers `succeeded` at once AND queues the webhook with no delay, so for every top-up the
 * request's completion and the webhook's completion race for the row. Expected: exactly one credit per top-up,
 * the request answers 201 with `succeeded`, every webhook delivery is answered 2xx.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBank, type RunningBank } from "../../scripts/lib/stack";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { testPool } from "../helpers/db";
import { createApiUser } from "../helpers/http";
import { balanceOf, freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

/** Top-ups raced at once: enough that both orders (webhook first, request first) occur, small for 2 cores. */
const RACES = 12;

let stateDir = "";
let bank: RunningBank | null = null;
let app: Service | null = null;
let appUrl = "";

beforeAll(async () => {
  const stack = testStack();
  stateDir = await mkdtemp(join(tmpdir(), "c05-bank-"));
  const appPort = await freePort();
  appUrl = `http://127.0.0.1:${appPort}`;
  bank = await startBank({
    env: {
      APP_URL: appUrl,
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: stack.webhookSecrets,
      BANK_SYNC_SUCCESS: "1",
      BANK_WEBHOOK_DELAY_MS: "0",
      BANK_WEBHOOK_RETRY_BASE_MS: "100",
      BANK_WEBHOOK_RETRY_MAX_MS: "400",
      BANK_SHUTDOWN_GRACE_MS: "200",
    },
  });
  app = await startExtraApp({ name: "c05-app", port: appPort, bankUrl: bank.url });
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await bank?.stop();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

interface Delivery {
  status: "pending" | "delivered" | "failed";
  attempts: Array<{ status?: number }>;
}

async function deliveriesFor(merchantRef: string): Promise<Delivery[]> {
  const response = await fetch(`${bank!.url}/_sandbox/deliveries?${new URLSearchParams({ merchantRef })}`);
  return ((await response.json()) as { deliveries: Delivery[] }).deliveries;
}

describe("C05: webhook and the request's own completion in the same tick", () => {
  it("exactly one credit per top-up; the request sees succeeded; every webhook delivery is answered 2xx", async () => {
    const user = await createApiUser();
    const refIds = Array.from({ length: RACES }, () => freshRefId("c05"));
    const answers = await Promise.all(
      refIds.map((refId, i) =>
        fetch(`${appUrl}/api/v1/topups`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
          body: JSON.stringify({ refId, amount: 100 + i }),
        }).then(async (response) => ({
          status: response.status,
          body: (await response.json()) as { topup: { status: string } },
        })),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(201);
      expect(answer.body.topup.status).toBe("succeeded");
    }

    // Every webhook reaches a final state, answered 2xx on its first attempt.
    const deadline = Date.now() + 20_000;
    for (const refId of refIds) {
      const merchantRef = `topup:${user.id}:${refId}`;
      const deliveries = await waitFor(
        () => deliveriesFor(merchantRef),
        (found) => found.length > 0 && found.every((d) => d.status !== "pending"),
        {
          what: `the webhook of ${refId} to be delivered`,
          timeoutMs: Math.max(0, deadline - Date.now()),
          intervalMs: 50,
        },
      );
      for (const delivery of deliveries) {
        expect(delivery.status).toBe("delivered");
        expect(delivery.attempts.map((a) => a.status)).toEqual([200]);
      }
    }

    const expected = refIds.reduce((sum, _refId, i) => sum + 100 + i, 0);
    expect(await balanceOf(user.id)).toBe(expected);
    const succeeded = await testPool().query(
      "SELECT e.ref_id, count(*)::int AS n FROM ledger_transitions t JOIN ledger_entries e ON e.user_id = t.user_id AND e.id = t.entry_id WHERE e.user_id = $1 AND t.to_status = 'succeeded' GROUP BY e.ref_id",
      [user.id],
    );
    expect(succeeded.rows).toHaveLength(RACES);
    for (const row of succeeded.rows) expect(row.n, row.ref_id).toBe(1);
    // Who won differs per row; what matters is that each row moved once. Record the split for the log.
    const winners = await testPool().query(
      "SELECT t.actor, count(*)::int AS n FROM ledger_transitions t WHERE t.user_id = $1 AND t.to_status = 'succeeded' GROUP BY t.actor ORDER BY t.actor",
      [user.id],
    );
    process.stderr.write(`C05 winners: ${JSON.stringify(winners.rows)}\n`);
  });
});
