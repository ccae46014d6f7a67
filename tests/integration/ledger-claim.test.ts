/**
 * The claim's semantics on a real PostgreSQL (contract section 1, docs/development.md note 15), staged
 * deterministically: concurrent sessions are released in the same tick, and a blocked session is detected in
 * pg_stat_activity.
 */
import { describe, expect, it } from "vitest";
import { findEntryByKey, insertClaim, insertClaimOrLose } from "../../lib/ledger/claim";
import { awaitStoredEntry } from "../../lib/ledger/claim-runner";
import { CLAIM_INDEX } from "../../lib/ledger/constants";
import type { Queryable } from "../../lib/ledger/queryable";
import { storeResponse } from "../../lib/ledger/transitions";
import { functionDefinition } from "../helpers/function-files";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, countRows, dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
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
        fencingToken: 1,
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
        { from: null, to: "initiated", actor: "request", fencingToken: 1 },
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

describe("the stored response and a queue of claims on one connection", () => {
  it("stores only the first response (first writer wins)", async () => {
    const user = await createTestUser();
    const first = await claimEntry(claimRequest(user.id));
    const ref = { userId: user.id, entryId: first.id };
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
      // Each loser reads the row in its own statement and replays (the claim runner's loser path).
      const row = await findEntryByKey(request.key);
      const replays = await Promise.all(
        results.filter((r) => r === null).map(() => awaitStoredEntry(row!, request.params, { waitMs: 0 })),
      );
      expect(replays).toHaveLength(9);
      for (const replay of replays)
        expect(replay.outcome).toMatchObject({ kind: "replay", response: { status: 201, body: "once" } });
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
    await claimEntry(adjustment(freshRefId("ch")));
    const second = adjustment(freshRefId("ch"));
    await expect(insertClaimOrLose(testPool(), second)).rejects.toMatchObject({
      code: "23505",
      constraint: "ledger_entries_user_id_adjusts_entry_id_key",
    });
    expect(await countRows(user.id, "adjustment", second.key.refId)).toBe(0);
  });
});
