/**
 * The claim runner (lib/ledger/claim-runner.ts, docs/decisions/040): what it owns for every operation decided by
 * the ledger alone (the claim, the stored response and its Redis copy, the retry, the loser's wait, commit
 * uncertainty), driven through small decisions on real PostgreSQL and the test stack's Redis.
 */
import { describe, expect, it } from "vitest";
import { findEntryByKey, insertClaim } from "../../lib/ledger/claim";
import { countExpiredUnfinishedEntries, takeOverExpiredEntry } from "../../lib/ledger/take-over";
import {
  CommitUncertainError,
  decideInClaimTransaction,
  movedOrThrow,
  runClaimedOperation,
  type ClaimedOperation,
} from "../../lib/ledger/claim-runner";
import type { OperationKey } from "../../lib/ledger/keys";
import { readCachedReplay } from "../../lib/ledger/replay-cache";
import { completeEntry } from "../../lib/ledger/transitions";
import { jsonStoredResponse } from "../../lib/ledger/views";
import { createTestUser, testPool } from "../helpers/db";
import { claimRequest, countRows, freshRefId, transitionsOf } from "../helpers/ledger";

const params = { amount: 10, currency: "USD" };

/** A credit of 10 decided in the claim's transaction, answering 201 `{ ok: <entry id> }`. */
function creditOperation(
  key: OperationKey,
  overrides: Partial<ClaimedOperation<number>> = {},
): ClaimedOperation<number> {
  return {
    key,
    params,
    attempt: decideInClaimTransaction(
      { key, amountMinor: 10, currency: "USD", params, leaseMs: 30_000, actor: "request" },
      async (tx, claim) => {
        const entry = movedOrThrow(
          await completeEntry(claim.ref, { actor: "request", guard: claim.guard, credit: true }, tx),
          "test",
        );
        return { kind: "store", response: jsonStoredResponse(201, { ok: entry.id }), detail: entry.id };
      },
    ),
    waitMs: 0,
    ...overrides,
  };
}

async function freshKey(): Promise<OperationKey> {
  const user = await createTestUser();
  return { userId: user.id, type: "reward", refId: freshRefId("runner") };
}

describe("runClaimedOperation", () => {
  it("the winner claims, decides, stores the first response on the row and writes its Redis copy", async () => {
    const key = await freshKey();
    const ran = await runClaimedOperation(creditOperation(key));
    if (ran.kind !== "decided") throw new Error(`expected decided, got ${ran.kind}`);
    const row = await findEntryByKey(key);
    expect(row).toMatchObject({ status: "succeeded", response: ran.response, leaseOwner: null });
    expect(ran.response).toEqual({ status: 201, body: JSON.stringify({ ok: row?.id }) });
    expect(ran.detail).toBe(row?.id);
    expect(await readCachedReplay(key, params)).toEqual({ kind: "replay", response: ran.response });
    expect(await transitionsOf(key.userId, row!.id)).toEqual([
      { from: null, to: "initiated", actor: "request", attempt: 1 },
      { from: "initiated", to: "succeeded", actor: "request", attempt: 1 },
    ]);
  });

  it("a loser replays the stored response with the row; other parameters are a mismatch naming the field", async () => {
    const key = await freshKey();
    const first = await runClaimedOperation(creditOperation(key));
    if (first.kind !== "decided") throw new Error("expected decided");
    const again = await runClaimedOperation(creditOperation(key));
    expect(again).toMatchObject({ kind: "existing", outcome: { kind: "replay", response: first.response } });
    if (again.kind !== "existing") return;
    expect(again.entry.status).toBe("succeeded");
    const other = await runClaimedOperation(creditOperation(key, { params: { amount: 11, currency: "USD" } }));
    expect(other).toMatchObject({ kind: "existing", outcome: { kind: "mismatch", fields: ["amount"] } });
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("20 concurrent runs of one key: one decides, 19 replay its response byte for byte", async () => {
    const key = await freshKey();
    const runs = await Promise.all(
      Array.from({ length: 20 }, () => runClaimedOperation(creditOperation(key, { waitMs: 5_000 }))),
    );
    const decided = runs.filter((run) => run.kind === "decided");
    expect(decided).toHaveLength(1);
    const response = decided[0]?.kind === "decided" ? decided[0].response : null;
    for (const run of runs.filter((r) => r.kind !== "decided")) {
      expect(run).toMatchObject({ kind: "existing", outcome: { kind: "replay", response } });
    }
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("abandon rolls the claim back: no row, no response, the decision's detail returned", async () => {
    const key = await freshKey();
    const ran = await runClaimedOperation<number, string>({
      key,
      params,
      attempt: decideInClaimTransaction<number, string>(
        { key, amountMinor: 10, currency: "USD", params, leaseMs: 30_000, actor: "request" },
        async () => ({ kind: "abandon", detail: "over the cap" }),
      ),
    });
    expect(ran).toEqual({ kind: "abandoned", detail: "over the cap" });
    expect(await countRows(key.userId, key.type, key.refId)).toBe(0);
    expect(await readCachedReplay(key, params)).toBeNull();
  });

  it("a serialization failure runs the attempt again as a whole, and the second attempt decides", async () => {
    const key = await freshKey();
    let attempts = 0;
    const inner = creditOperation(key).attempt;
    const ran = await runClaimedOperation<number>({
      key,
      params,
      attempt: async (context) => {
        attempts += 1;
        if (attempts === 1) throw Object.assign(new Error("could not serialize access"), { code: "40001" });
        return inner(context);
      },
    });
    expect(attempts).toBe(2);
    expect(ran.kind).toBe("decided");
  });

  it("an error after the attempt may have committed is a CommitUncertainError carrying it; before, it is thrown unchanged", async () => {
    const key = await freshKey();
    const cause = new Error("connection reset after COMMIT");
    const uncertain = runClaimedOperation<number>({
      key,
      params,
      attempt: async ({ mayCommit }) => {
        mayCommit();
        throw cause;
      },
    });
    await expect(uncertain).rejects.toBeInstanceOf(CommitUncertainError);
    await expect(uncertain).rejects.toMatchObject({
      name: "CommitUncertainError",
      cause,
      message: `reward ${key.refId}: the attempt may have committed before it failed`,
    });
    const plain = new Error("refused before any write");
    await expect(
      runClaimedOperation<number>({
        key,
        params,
        attempt: async () => {
          throw plain;
        },
      }),
    ).rejects.toBe(plain);
  });

  it("a lost claim whose row cannot be read is a bug, thrown (rows are never deleted)", async () => {
    const key = await freshKey();
    await expect(runClaimedOperation<number>({ key, params, attempt: async () => ({ kind: "lost" }) })).rejects.toThrow(
      `reward ${key.refId}: claimed row vanished`,
    );
  });
});

describe("decideInClaimTransaction", () => {
  it("an error thrown by the decision rolls the claim back and reaches the caller unchanged (it is not an abandon)", async () => {
    const key = await freshKey();
    const bug = new Error("decision failed");
    await expect(
      runClaimedOperation<number, string>({
        key,
        params,
        attempt: decideInClaimTransaction<number, string>(
          { key, amountMinor: 10, currency: "USD", params, leaseMs: 30_000, actor: "request" },
          async () => {
            throw bug;
          },
        ),
      }),
    ).rejects.toBe(bug);
    expect(await countRows(key.userId, key.type, key.refId)).toBe(0);
  });
});

describe("takeOverExpiredEntry", () => {
  it("takes over an expired unfinished row once: fencing token raised, new lease owner, the previous owner named", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id, { leaseOwner: "dead-worker", leaseMs: -60_000 });
    const claimed = await insertClaim(testPool(), request);
    if (!claimed) throw new Error("expected a claim");
    expect(await countExpiredUnfinishedEntries([user.id])).toBe(1);
    const taken = await takeOverExpiredEntry({ workerId: "taker", leaseMs: 30_000, userIds: [user.id] });
    expect(taken).toMatchObject({
      previousOwner: "dead-worker",
      entry: { id: claimed.id, attempt: 2, leaseOwner: "taker", status: "initiated" },
    });
    expect(taken?.ageMs).toBeGreaterThanOrEqual(0);
    expect(await countExpiredUnfinishedEntries([user.id])).toBe(0);
    expect(await takeOverExpiredEntry({ workerId: "second", leaseMs: 30_000, userIds: [user.id] })).toBeNull();
  });
});

describe("movedOrThrow", () => {
  it("returns the moved row and throws, naming the operation, when the transition did not move it", async () => {
    const key = await freshKey();
    const ran = await runClaimedOperation(creditOperation(key));
    if (ran.kind !== "decided") throw new Error("expected decided");
    const row = await findEntryByKey(key);
    if (!row) throw new Error("no row");
    const ref = { userId: key.userId, entryId: row.id };
    const again = await completeEntry(ref, { actor: "request", guard: { kind: "status_only" }, credit: true });
    expect(again.kind).toBe("not_moved");
    expect(() => movedOrThrow(again, "payment o-1")).toThrow(
      "payment o-1: the fresh claim's transition did not move the row",
    );
  });
});
