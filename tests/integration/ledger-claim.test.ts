/**
 * The claim's semantics on a real PostgreSQL (contract section 1, docs/development.md note 15), staged
 * deterministically: concurrent sessions are released in the same tick, and a blocked session is detected in
 * pg_stat_activity.
 */
import { describe, expect, it } from "vitest";
import {
  awaitStoredResponse,
  claimOperation,
  findEntryByKey,
  insertClaim,
  insertClaimOrLose,
} from "../../lib/ledger/claim";
import { CLAIM_INDEX } from "../../lib/ledger/constants";
import type { Queryable } from "../../lib/ledger/queryable";
import { storeResponse } from "../../lib/ledger/transitions";
import { functionDefinition } from "../helpers/function-files";
import { createTestUser, testPool } from "../helpers/db";
import { claimRequest, countRows, dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";

describe("insertClaim", () => {
  it("three sessions released at the same instant on one key: one gets the row, two get nothing and then read it", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const clients = await Promise.all([0, 1, 2].map((i) => dedicatedClient(`claim-3-${i}`)));
    try {
      const results = await Promise.all(clients.map((client) => insertClaim(client, request)));
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({
        status: "initiated",
        attempt: 1,
        leaseOwner: "test-worker",
        amountMinor: 1000,
      });
      // Each loser reads the row in its own statement and sees the winner's committed row.
      for (const [i, result] of results.entries()) {
        if (result !== null) continue;
        const seen = await findEntryByKey(request.key, clients[i]);
        expect(seen?.id).toBe(winners[0]!.id);
      }
      expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
      expect(await transitionsOf(user.id, winners[0]!.id)).toEqual([
        { from: null, to: "initiated", actor: "request", attempt: 1 },
      ]);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  for (const ending of ["ROLLBACK", "COMMIT"] as const) {
    it(`a winner holding its transaction open blocks the others; on ${ending} ${ending === "ROLLBACK" ? "exactly one waiter wins" : "none wins"}`, async () => {
      const user = await createTestUser();
      const request = claimRequest(user.id);
      const prefix = `claim-hold-${ending}-${user.id.slice(-6)}`;
      const holder = await dedicatedClient(`${prefix}-holder`);
      const waiters = await Promise.all([0, 1].map((i) => dedicatedClient(`${prefix}-waiter-${i}`)));
      try {
        await holder.query("BEGIN");
        expect(await insertClaim(holder, request)).not.toBeNull();
        const pending = waiters.map((client) => insertClaim(client, request));
        await waitForBlockedSessions({ applicationNamePrefix: `${prefix}-waiter` }, 2);
        await holder.query(ending);
        const results = await Promise.all(pending);
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(ending === "ROLLBACK" ? 1 : 0);
        expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
      } finally {
        await Promise.all([holder, ...waiters].map((c) => c.end()));
      }
    });
  }
});

describe("claimOperation and the loser's path", () => {
  it("replays the stored response to a loser, byte for byte", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const first = await claimOperation(request, 0);
    expect(first.kind).toBe("claimed");
    if (first.kind !== "claimed") return;
    const body = '{"topup":{"refId":"x","amount":1000}}';
    await storeResponse({ userId: user.id, entryId: first.entry.id }, { status: 201, body });
    const second = await claimOperation(request, 0);
    expect(second).toMatchObject({ kind: "replay", response: { status: 201, body } });
  });

  it("refuses the same key with another amount, listing the field, before the in-progress check", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    expect((await claimOperation(request, 0)).kind).toBe("claimed");
    // The winner has not stored a response: a mismatching request is still refused at once, not told to wait.
    const started = Date.now();
    const other = await claimOperation(
      { ...request, amountMinor: 2000, params: { amount: 2000, currency: "USD" } },
      5_000,
    );
    expect(other).toEqual({ kind: "mismatch", fields: ["amount"] });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
  });

  it("lists every differing field (currency too)", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    await claimOperation(request, 0);
    const other = await awaitStoredResponse(request.key, { amount: 5, currency: "EUR" }, 0);
    expect(other).toEqual({ kind: "mismatch", fields: ["amount", "currency"] });
  });

  it("tells a loser the request is in progress when the winner does not store within the wait, and never claims twice", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    expect((await claimOperation(request, 0)).kind).toBe("claimed");
    const started = Date.now();
    // Another request (its own lease owner, as every request has: lib/ledger/worker.ts newLeaseOwner).
    const loser = await claimOperation({ ...request, leaseOwner: "another-request" }, 300);
    expect(loser).toMatchObject({ kind: "in_progress", retryAfterS: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
  });

  it("a waiting loser replays as soon as the winner stores its response", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const first = await claimOperation(request, 0);
    if (first.kind !== "claimed") throw new Error("expected a claim");
    const waiting = claimOperation({ ...request, leaseOwner: "another-request" }, 5_000);
    await storeResponse({ userId: user.id, entryId: first.entry.id }, { status: 201, body: "{}" });
    expect(await waiting).toMatchObject({ kind: "replay", response: { status: 201, body: "{}" } });
  });

  it("a waiting loser replays promptly after the store, not at the end of its wait budget", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const first = await claimOperation(request, 0);
    if (first.kind !== "claimed") throw new Error("expected a claim");
    let storedAt = 0;
    const waiting = claimOperation({ ...request, leaseOwner: "another-request" }, 10_000).then((outcome) => ({
      outcome,
      answeredAt: Date.now(),
    }));
    await new Promise((resolve) => setTimeout(resolve, 150));
    await storeResponse({ userId: user.id, entryId: first.entry.id }, { status: 201, body: "{}" });
    storedAt = Date.now();
    const { outcome, answeredAt } = await waiting;
    expect(outcome.kind).toBe("replay");
    // The polling step is capped at 200 ms; a 10 s budget must not be slept through.
    expect(answeredAt - storedAt).toBeLessThan(2_000);
  });

  it("a request that finds its own claim committed (same lease owner, no response yet) carries on as the winner", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id, { leaseOwner: "request-a" });
    // The claim commits but its answer is lost (a failover): the request's retry finds the key taken.
    const committed = await insertClaim(testPool(), request);
    expect(committed).not.toBeNull();
    const retried = await claimOperation(request, 0);
    expect(retried).toMatchObject({ kind: "claimed", entry: { id: committed!.id, leaseOwner: "request-a" } });
    // Another request on the same key is a loser as before: in progress, never a second winner.
    expect(await claimOperation({ ...request, leaseOwner: "request-b" }, 0)).toMatchObject({ kind: "in_progress" });
    // Once the winner stored its response, even its own lease owner gets the replay.
    await storeResponse({ userId: user.id, entryId: committed!.id }, { status: 201, body: "{}" });
    expect(await claimOperation(request, 0)).toMatchObject({ kind: "replay" });
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
  });

  it("a request that finds its own claim but sends other parameters is refused (mismatch), never carried on as the winner", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id, { leaseOwner: "request-c" });
    expect(await insertClaim(testPool(), request)).not.toBeNull();
    const other = { ...request, amountMinor: 2000, params: { amount: 2000, currency: "USD" } };
    expect(await claimOperation(other, 0)).toEqual({ kind: "mismatch", fields: ["amount"] });
  });

  it("reading a key that has no row gives null (the caller claims again)", async () => {
    const user = await createTestUser();
    expect(await awaitStoredResponse(claimRequest(user.id).key, { amount: 1000, currency: "USD" }, 0)).toBeNull();
  });

  it("stores only the first response (first writer wins)", async () => {
    const user = await createTestUser();
    const first = await claimOperation(claimRequest(user.id), 0);
    if (first.kind !== "claimed") throw new Error("expected a claim");
    const ref = { userId: user.id, entryId: first.entry.id };
    const a = await storeResponse(ref, { status: 201, body: "first" });
    const b = await storeResponse(ref, { status: 201, body: "second" });
    expect(a).toEqual({ stored: true, response: { status: 201, body: "first" } });
    expect(b).toEqual({ stored: false, response: { status: 201, body: "first" } });
  });

  it("C11: ten claims for one key issued on one connection before any reply is read: one execution, nine replays", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const client = await dedicatedClient("c11");
    try {
      // pg queues the ten queries on the one connection; none of their replies has been read when all are sent.
      const results = await Promise.all(Array.from({ length: 10 }, () => insertClaim(client, request)));
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      await storeResponse({ userId: user.id, entryId: winners[0]!.id }, { status: 201, body: "once" });
      const replays = await Promise.all(
        results.filter((r) => r === null).map(() => awaitStoredResponse(request.key, request.params, 0)),
      );
      expect(replays).toHaveLength(9);
      for (const replay of replays)
        expect(replay).toMatchObject({ kind: "replay", response: { status: 201, body: "once" } });
    } finally {
      await client.end();
    }
  });
});

describe("insertClaimOrLose: a duplicate raised as an error", () => {
  /**
   * Runs `work` on a connection where the claim's function, ledger_claim, is replaced for one rolled-back transaction
   * by its file's text without its ON CONFLICT clause, so that PostgreSQL itself raises the duplicate as a 23505
   * instead of returning no row: the shape a layer between the ledger and the database that turns the conflict into
   * an error would hand back.
   */
  async function withoutOnConflict<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const definition = functionDefinition("ledger_claim");
      const bare = definition.replace("ON CONFLICT (user_id, type, ref_id) DO NOTHING", "");
      if (bare === definition) throw new Error("the claim's INSERT no longer has the expected ON CONFLICT clause");
      await client.query(bare);
      // A savepoint per call: the raised 23505 aborts only what came after it.
      const attempt = async (call: () => Promise<unknown>) => {
        await client.query("SAVEPOINT c01");
        try {
          return await call();
        } catch (error) {
          await client.query("ROLLBACK TO SAVEPOINT c01");
          throw error;
        }
      };
      return await work({
        query: (config: unknown, values?: unknown[]) =>
          attempt(() => client.query(config as never, values as never)) as never,
      } as Queryable);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }

  it("C01: a 23505 that PostgreSQL raises on the claim index is a lost claim (null), and nothing more is written", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id);
    const first = await insertClaim(testPool(), request);
    expect(first).not.toBeNull();
    await withoutOnConflict(async (client) => {
      // The same statement on the same key, with the duplicate surfacing as PostgreSQL's error.
      const raised = await insertClaim(client, request).catch((error: unknown) => error);
      expect(raised).toMatchObject({ code: "23505", constraint: CLAIM_INDEX });
      expect(await insertClaimOrLose(client, request)).toBeNull();
    });
    expect(await countRows(user.id, "topup", request.key.refId)).toBe(1);
    expect(await transitionsOf(user.id, first!.id)).toHaveLength(1);
  });

  it("a 23505 on another index (a second adjustment of one top-up under another key) is rethrown, never a lost claim", async () => {
    const user = await createTestUser();
    const topup = await insertClaim(testPool(), claimRequest(user.id));
    const adjustment = (refId: string) => ({
      ...claimRequest(user.id, { type: "adjustment", refId }),
      adjustsEntryId: topup!.id,
    });
    expect(await claimOperation(adjustment(freshRefId("ch")), 0)).toMatchObject({ kind: "claimed" });
    const second = adjustment(freshRefId("ch"));
    await expect(claimOperation(second, 0)).rejects.toMatchObject({
      code: "23505",
      constraint: "ledger_entries_user_id_adjusts_entry_id_key",
    });
    await expect(insertClaimOrLose(testPool(), second)).rejects.toMatchObject({ code: "23505" });
    expect(await countRows(user.id, "adjustment", second.key.refId)).toBe(0);
  });
});
