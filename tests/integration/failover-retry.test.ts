/**
 * Failover as a normal event, on a real PostgreSQL: the app's pool runs through a proxy that
 * loses answers on purpose (tests/helpers/cutting-proxy.ts), and sessions are terminated with
 * pg_terminate_backend (57P01, what a node being stopped sends).
 *  - A payment whose answer is lost after it committed is retried; the retry finds the key taken by its own commit
 *    and answers from the row: money moved once, never twice.
 *  - A claim whose answer is lost carries on as the winner (the claim runner finds its own lease owner on the row)
 *    instead of answering 409; a top-up's claim and admission in one statement likewise, admitted once.
 *  - 57P01 mid-transaction: the whole transaction runs again and commits; health says "degraded" meanwhile.
 *  - 25006 (a read-only node) is retried only for the bounded time, then thrown.
 *  - The pool's error handler logs the idle connection it drops.
 */
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { closeDb, pool, withTransaction } from "../../lib/db";
import { checkHealth } from "../../lib/health/check-health";
import { findEntryByKey, insertClaimOrLose } from "../../lib/ledger/claim";
import { runClaimedOperation } from "../../lib/ledger/claim-runner";
import { classifyDbError } from "../../lib/ledger/db-errors";
import type { LedgerEntry } from "../../lib/ledger/entry";
import { storeResponse } from "../../lib/ledger/transitions";
import { failoverRetriesInProgress, withTransactionRetry, type TransactionRetryInfo } from "../../lib/ledger/retry";
import { log } from "../../lib/log";
import { createPayment } from "../../lib/payments/create-payment";
import { createTopup } from "../../lib/topups/create-topup";
import { createTestUser, testPool } from "../helpers/db";
import { startCuttingProxy, type CuttingProxy } from "../helpers/cutting-proxy";
import { balanceOf, claimRequest, countRows, freshRefId, seedBalance, transitionsOf } from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

let proxy: CuttingProxy;

beforeAll(async () => {
  const direct = new URL(testStack().databaseUrl);
  proxy = await startCuttingProxy({ host: direct.hostname, port: Number(direct.port) });
  // lib/env.ts reads the environment on first use, which comes after this in this file's own module registry.
  process.env.DATABASE_URL = proxy.via(testStack().databaseUrl);
  // A port nobody listens on: a top-up's bank call fails at once, and its outcome is unknown.
  process.env.BANK_URL = `http://127.0.0.1:${await closedPort()}`;
});

/** A local TCP port that was free a moment ago and has nothing listening on it now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

afterAll(async () => {
  await closeDb();
  await proxy?.close();
});

describe("a lost answer is settled by the operation's key, never by running it twice", () => {
  it("a payment whose answer is lost after it committed is retried, finds its own committed row, and debits once", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    await pool().query("SELECT 1"); // an open connection, so the marker below can only match the payment's answer
    // The payment is one autocommit statement returning its row (docs/decisions/040): its CommandComplete is
    // "SELECT 1", sent after the commit.
    proxy.arm("SELECT 1\0");
    const cutsBefore = proxy.cuts();
    const result = await createPayment({ userId: user.id, orderId, amountMinor: 300, currency: "USD" });
    expect(proxy.cuts()).toBe(cutsBefore + 1);
    expect(result).toMatchObject({ kind: "response", response: { status: 201 } });
    expect(await balanceOf(user.id)).toBe(700);
    expect(await countRows(user.id, "payment", orderId)).toBe(1);
  });

  it("a claim whose answer is lost carries on as the winner (its own lease owner), not as a 409 loser", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const finished: LedgerEntry[] = [];
    await pool().query("SELECT 1");
    // The claim is one statement ending in SELECT: its CommandComplete is "SELECT 1", sent after the autocommit.
    proxy.arm("SELECT 1\0");
    const cutsBefore = proxy.cuts();
    const run = await runClaimedOperation<null>({
      key: request.key,
      params: request.params,
      replayCopy: "read_by_caller",
      attempt: async ({ leaseOwner, mayCommit }) => {
        mayCommit();
        const entry = await insertClaimOrLose(pool(), { ...request, leaseOwner });
        return entry ? { kind: "claimed", entry } : { kind: "lost" };
      },
      finish: async (entry) => {
        finished.push(entry);
        const stored = await storeResponse({ userId: user.id, entryId: entry.id }, { status: 201, body: "{}" });
        return { response: stored.response, replayed: false, detail: null };
      },
    });
    expect(proxy.cuts()).toBe(cutsBefore + 1);
    expect(run).toMatchObject({ kind: "won", response: { status: 201, body: "{}" } });
    expect(finished).toEqual([expect.objectContaining({ status: "initiated", fencingToken: 1, response: null })]);
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
  });

  it("a top-up whose claim and admission's answer is lost carries on as the winner: admitted once, answered 201", async () => {
    const user = await createTestUser();
    const refId = freshRefId("lost-answer");
    await pool().query("SELECT 1");
    // One autocommit statement (docs/decisions/044) returning the admitted row: "SELECT 1" after the commit.
    proxy.arm("SELECT 1\0");
    const cutsBefore = proxy.cuts();
    // The bank cannot be reached (BANK_URL is a closed port here): the row stays `processing`, answered as such.
    const result = await createTopup({ userId: user.id, refId, amountMinor: 500, currency: "USD" });
    expect(proxy.cuts()).toBe(cutsBefore + 1);
    expect(result).toMatchObject({ kind: "response", replayed: false, response: { status: 201 } });
    if (result.kind !== "response") return;
    expect(JSON.parse(result.response.body)).toMatchObject({ topup: { refId, status: "processing" } });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    const row = await findEntryByKey({ userId: user.id, type: "topup", refId });
    expect((await transitionsOf(user.id, row!.id)).map((t) => t.to)).toEqual(["initiated", "processing"]);
  });
});

describe("whole-transaction retry after a lost connection", () => {
  it("57P01 mid-transaction: the transaction runs again as a whole and commits; health says degraded meanwhile", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const retries: TransactionRetryInfo[] = [];
    const inProgressSeen: number[] = [];
    let healthDuringRetry: string | null = null;
    let attempts = 0;
    const result = await withTransactionRetry(
      () =>
        withTransaction(async (client) => {
          attempts += 1;
          await client.query("UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = $1", [user.id]);
          if (attempts === 1) {
            const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
            await testPool().query("SELECT pg_terminate_backend($1)", [pid]);
          } else {
            healthDuringRetry = (await checkHealth()).db;
          }
          await client.query("UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1", [user.id]);
          return attempts;
        }),
      {
        onRetry: (info) => {
          retries.push(info);
          inProgressSeen.push(failoverRetriesInProgress());
        },
      },
    );
    expect(result).toBe(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, reason: "connection_lost", sqlstate: null });
    expect(classifyDbError(retries[0]?.error)).toMatchObject({ kind: "connection_lost" });
    expect(inProgressSeen).toEqual([1]);
    expect(healthDuringRetry).toBe("degraded");
    expect(failoverRetriesInProgress()).toBe(0);
    expect((await checkHealth()).db).toBe("ok");
    // The killed attempt's +10 was rolled back; the retry's +11 landed once.
    expect(await balanceOf(user.id)).toBe(111);
  });

  it("25006 (the node is read-only) is retried for the bounded time only, then thrown unchanged", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    let attempts = 0;
    const started = Date.now();
    const error = await withTransactionRetry(
      () =>
        withTransaction(async (client) => {
          attempts += 1;
          await client.query("SET TRANSACTION READ ONLY");
          await client.query("UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1", [user.id]);
        }),
      { failoverRetryMs: 600 },
    ).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect((error as { code?: string } | null)?.code).toBe("25006");
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(failoverRetriesInProgress()).toBe(0);
    expect(await balanceOf(user.id)).toBe(100);
  });

  it("a unique violation is not a lost connection: thrown at once, no retry", async () => {
    let attempts = 0;
    const error = await withTransactionRetry(() =>
      withTransaction(async (client) => {
        attempts += 1;
        await client.query("SELECT 1/0");
      }),
    ).catch((thrown: unknown) => thrown);
    expect((error as { code?: string }).code).toBe("22012");
    expect(attempts).toBe(1);
  });
});

describe("the pool's error handler", () => {
  it("logs the idle connection it drops instead of swallowing it silently", async () => {
    const warn = vi.spyOn(log(), "warn");
    try {
      const client = await pool().connect();
      const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      client.release(); // idle in the pool now
      await testPool().query("SELECT pg_terminate_backend($1)", [pid]);
      await waitFor(
        () => warn.mock.calls.some((call) => call[1] === "idle database connection dropped"),
        (logged) => logged,
        { what: "the pool's error handler to log the dropped connection", timeoutMs: 5_000 },
      );
      expect(warn.mock.calls.find((call) => call[1] === "idle database connection dropped")?.[0]).toMatchObject({
        code: "57P01",
      });
    } finally {
      warn.mockRestore();
    }
  });
});
