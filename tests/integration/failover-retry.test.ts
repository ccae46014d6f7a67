/**
 * Failover as a normal event, on a real PostgreSQL: the app's pool runs through a proxy that
 * loses answers on purpose (tests/helpers/cutting-proxy.ts), and sessions are terminated with
 * pg_terminate_backend (57P01, what a node being stopped sends).
 *  - A payment whose answer is lost after it committed is retried; the retry finds the key taken by its own commit
 *    and answers from the row: money moved once, never twice.
 *  - A claim whose answer is lost carries on as the winner (same lease owner) instead of answering 409; a top-up's
 *    claim and admission in one statement likewise, admitted once.
 *  - 57P01 mid-transaction: the whole transaction runs again and commits; health says "degraded" meanwhile.
 *  - 25006 (a read-only node) is retried only for the bounded time, then thrown.
 *  - The pool's error handler logs the idle connection it drops.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { closeDb, pool, withTransaction } from "../../lib/db";
import { checkHealth } from "../../lib/health/check-health";
import { claimOperation } from "../../lib/ledger/claim";
import { classifyDbError } from "../../lib/ledger/db-errors";
import { claimAndAdmitTopup } from "../../lib/ledger/topup-admission";
import { failoverRetriesInProgress, withTransactionRetry, type TransactionRetryInfo } from "../../lib/ledger/retry";
import { log } from "../../lib/log";
import { createPayment } from "../../lib/payments/create-payment";
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
});

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
    const request = claimRequest(user.id, { leaseOwner: `request-${freshRefId()}` });
    await pool().query("SELECT 1");
    // The claim is a CTE ending in SELECT: its CommandComplete is "SELECT 1", sent after the autocommit.
    proxy.arm("SELECT 1\0");
    const cutsBefore = proxy.cuts();
    const outcome = await claimOperation(request, 0);
    expect(proxy.cuts()).toBe(cutsBefore + 1);
    expect(outcome).toMatchObject({ kind: "claimed", entry: { status: "initiated", leaseOwner: request.leaseOwner } });
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
  });

  it("a top-up's claim and admission whose answer is lost carries on as the winner, admitted once", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id, { leaseOwner: `request-${freshRefId()}` });
    await pool().query("SELECT 1");
    // One autocommit statement (docs/decisions/044) returning the admitted row: "SELECT 1" after the commit.
    proxy.arm("SELECT 1\0");
    const cutsBefore = proxy.cuts();
    const outcome = await claimOperation(request, 0, {
      insert: (db, claim) =>
        claimAndAdmitTopup(db, claim, { maxBalanceMinor: 10_000_000, refusal: { status: 422, body: "{}" } }),
    });
    expect(proxy.cuts()).toBe(cutsBefore + 1);
    expect(outcome).toMatchObject({ kind: "claimed", entry: { status: "processing", leaseOwner: request.leaseOwner } });
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
    const entryId = outcome.kind === "claimed" ? outcome.entry.id : -1;
    expect((await transitionsOf(user.id, entryId)).map((t) => t.to)).toEqual(["initiated", "processing"]);
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
