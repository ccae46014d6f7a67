/**
 * The claim runner (lib/ledger/claim-runner.ts, docs/decisions/040 and 053): what it owns for every entry type (the
 * Redis replay copy, the retry, commit uncertainty, the own-lost-claim check, the loser's wait, the one "claimed row
 * vanished" error), driven through small operations on real PostgreSQL and the test stack's Redis: decided in the
 * claim's transaction, or claimed and finished after the commit, as a top-up or a refund is.
 */
import { describe, expect, it } from "vitest";
import { withTransaction } from "../../lib/db";
import { findEntryByKey, insertClaim, insertClaimOrLose } from "../../lib/ledger/claim";
import { countExpiredUnfinishedEntries, takeOverExpiredEntry } from "../../lib/ledger/take-over";
import {
  awaitStoredEntry,
  CommitUncertainError,
  movedOrThrow,
  runClaimedOperation,
  type ClaimedOperation,
  type ClaimRun,
} from "../../lib/ledger/claim-runner";
import type { LedgerEntry } from "../../lib/ledger/entry";
import type { OperationKey } from "../../lib/ledger/keys";
import { fromClaimRun } from "../../lib/ledger/outcome";
import { readCachedReplay } from "../../lib/ledger/replay-cache";
import { completeEntry, storeResponse } from "../../lib/ledger/transitions";
import { jsonStoredResponse } from "../../lib/ledger/views";
import { createTestUser, testPool } from "../helpers/db";
import { claimRequest, countRows, freshRefId, transitionsOf } from "../helpers/ledger";

const params = { amount: 10, currency: "USD" };

/** The claim request of a test operation on `key` (10 USD minor units). */
const requestOf = (key: OperationKey, leaseOwner: string) =>
  ({ key, amountMinor: 10, currency: "USD", params, leaseOwner, leaseMs: 30_000, actor: "request" }) as const;

/**
 * A credit of 10 decided in the claim's transaction (as an adjustment is), answering 201 `{ ok: <entry id> }`.
 * `replayCopy` is the caller's, so that the run answers without a `cached` outcome.
 */
function creditOperation(
  key: OperationKey,
  overrides: Partial<ClaimedOperation<number>> = {},
): ClaimedOperation<number> & { replayCopy: "read_by_caller" } {
  return {
    key,
    params,
    attempt: ({ leaseOwner, mayCommit }) =>
      withTransaction(async (tx) => {
        const claimed = await insertClaimOrLose(tx, requestOf(key, leaseOwner));
        if (!claimed) return { kind: "lost" };
        const ref = { userId: key.userId, entryId: claimed.id };
        const guard = { kind: "lease", fencingToken: claimed.fencingToken } as const;
        const entry = movedOrThrow(await completeEntry(ref, { actor: "request", guard, credit: true }, tx), "test");
        const response = jsonStoredResponse(201, { ok: entry.id });
        await storeResponse(ref, response, tx);
        mayCommit();
        return { kind: "decided", response, detail: entry.id };
      }),
    waitMs: 0,
    ...overrides,
    replayCopy: "read_by_caller",
  };
}

/**
 * An operation with an outside call, as a top-up or a refund: the attempt claims in one autocommit statement and
 * hands back the fresh row; `finish` (the "bank call") stores 201 `{ finished: <entry id> }`. `finished` lists the
 * rows `finish` ran on.
 */
function outsideCallOperation(key: OperationKey, overrides: Partial<ClaimedOperation<number>> = {}) {
  const finished: LedgerEntry[] = [];
  const operation: ClaimedOperation<number> & { replayCopy: "read_by_caller" } = {
    key,
    params,
    attempt: async ({ leaseOwner, mayCommit }) => {
      mayCommit();
      const entry = await insertClaimOrLose(testPool(), requestOf(key, leaseOwner));
      return entry ? { kind: "claimed", entry } : { kind: "lost" };
    },
    finish: async (entry) => {
      finished.push(entry);
      const stored = await storeResponse({ userId: key.userId, entryId: entry.id }, finishedResponse(entry.id));
      return { response: stored.response, replayed: !stored.stored, detail: entry.id };
    },
    waitMs: 0,
    ...overrides,
    replayCopy: "read_by_caller",
  };
  return { operation, finished };
}

const finishedResponse = (entryId: number) => jsonStoredResponse(201, { finished: entryId });

/** A node-postgres error with no SQLSTATE, as the driver raises when the socket dies (lib/ledger/db-errors.ts). */
const connectionLost = () => new Error("Connection terminated unexpectedly");

async function freshKey(type: OperationKey["type"] = "reward"): Promise<OperationKey> {
  const user = await createTestUser();
  return { userId: user.id, type, refId: freshRefId("runner") };
}

function wonOrThrow<T>(run: ClaimRun<T, unknown>) {
  if (run.kind !== "won") throw new Error(`expected won, got ${JSON.stringify(run)}`);
  return run;
}

describe("runClaimedOperation: an operation decided in the claim's commit", () => {
  it("the winner claims, decides, and its first response, stored on the row, gets its Redis copy", async () => {
    const key = await freshKey();
    const ran = wonOrThrow(await runClaimedOperation(creditOperation(key)));
    const row = await findEntryByKey(key);
    expect(row).toMatchObject({ status: "succeeded", response: ran.response, leaseOwner: null });
    expect(ran).toEqual({
      kind: "won",
      response: { status: 201, body: JSON.stringify({ ok: row?.id }) },
      replayed: false,
      detail: row?.id,
    });
    expect(await readCachedReplay(key, params)).toEqual({ kind: "replay", response: ran.response });
    expect(await transitionsOf(key.userId, row!.id)).toEqual([
      { from: null, to: "initiated", actor: "request", fencingToken: 1 },
      { from: "initiated", to: "succeeded", actor: "request", fencingToken: 1 },
    ]);
  });

  it("a loser replays the stored response with the row; other parameters are a mismatch naming the field", async () => {
    const key = await freshKey();
    const first = wonOrThrow(await runClaimedOperation(creditOperation(key)));
    const again = await runClaimedOperation(creditOperation(key));
    expect(again).toMatchObject({ kind: "existing", outcome: { kind: "replay", response: first.response } });
    if (again.kind !== "existing") return;
    expect(again.entry.status).toBe("succeeded");
    const other = await runClaimedOperation(creditOperation(key, { params: { amount: 11, currency: "USD" } }));
    expect(other).toMatchObject({ kind: "existing", outcome: { kind: "mismatch", fields: ["amount"] } });
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("20 concurrent runs of one key: one wins, 19 replay its response byte for byte", async () => {
    const key = await freshKey();
    const runs = await Promise.all(
      Array.from({ length: 20 }, () => runClaimedOperation(creditOperation(key, { waitMs: 5_000 }))),
    );
    const winners = runs.filter((run) => run.kind === "won");
    expect(winners).toHaveLength(1);
    const response = winners[0]?.kind === "won" ? winners[0].response : null;
    for (const run of runs.filter((r) => r.kind !== "won")) {
      expect(run).toMatchObject({ kind: "existing", outcome: { kind: "replay", response } });
    }
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("abandoned: the decision rolled its claim back; no row, no response, no copy, the detail returned", async () => {
    const key = await freshKey();
    const ran = await runClaimedOperation<number, string>({
      key,
      params,
      replayCopy: "read_by_caller",
      attempt: async ({ leaseOwner }) => {
        const rolledBack = new Error("over the cap");
        await withTransaction(async (tx) => {
          await insertClaim(tx, requestOf(key, leaseOwner));
          throw rolledBack;
        }).catch((error: unknown) => {
          if (error !== rolledBack) throw error;
        });
        return { kind: "abandoned", detail: "over the cap" };
      },
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
      replayCopy: "read_by_caller",
      attempt: async (context) => {
        attempts += 1;
        if (attempts === 1) throw Object.assign(new Error("could not serialize access"), { code: "40001" });
        return inner(context);
      },
    });
    expect(attempts).toBe(2);
    expect(ran.kind).toBe("won");
  });

  it("an error inside the attempt's transaction rolls the claim back and reaches the caller unchanged", async () => {
    const key = await freshKey();
    const bug = new Error("decision failed");
    await expect(
      runClaimedOperation<number>({
        key,
        params,
        replayCopy: "read_by_caller",
        attempt: ({ leaseOwner }) =>
          withTransaction(async (tx) => {
            await insertClaim(tx, requestOf(key, leaseOwner));
            throw bug;
          }),
      }),
    ).rejects.toBe(bug);
    expect(await countRows(key.userId, key.type, key.refId)).toBe(0);
  });

  it("an error after the attempt may have committed is a CommitUncertainError carrying it; before, it is thrown unchanged", async () => {
    const key = await freshKey();
    const cause = new Error("connection reset after COMMIT");
    const uncertain = runClaimedOperation<number>({
      key,
      params,
      replayCopy: "read_by_caller",
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
        replayCopy: "read_by_caller",
        attempt: async () => {
          throw plain;
        },
      }),
    ).rejects.toBe(plain);
  });

  it("a claim that hits a unique index other than the claim's is rethrown, never taken for a lost claim (C01)", async () => {
    const user = await createTestUser();
    const topup = await insertClaim(testPool(), claimRequest(user.id));
    const adjustment = (refId: string) => ({
      ...claimRequest(user.id, { type: "adjustment", refId }),
      adjustsEntryId: topup!.id,
    });
    const claimAdjustment = (request: ReturnType<typeof adjustment>) =>
      runClaimedOperation<number>({
        key: request.key,
        params: request.params,
        replayCopy: "none",
        attempt: async () => {
          const entry = await insertClaimOrLose(testPool(), request);
          return entry ? { kind: "decided", response: null, detail: entry.id } : { kind: "lost" };
        },
      });
    expect(await claimAdjustment(adjustment(freshRefId("ch")))).toMatchObject({ kind: "won", response: null });
    const second = adjustment(freshRefId("ch"));
    await expect(claimAdjustment(second)).rejects.toMatchObject({
      code: "23505",
      constraint: "ledger_entries_user_id_adjusts_entry_id_key",
    });
    expect(await countRows(user.id, "adjustment", second.key.refId)).toBe(0);
  });

  it("a lost claim whose row cannot be read is a bug, thrown (rows are never deleted)", async () => {
    const key = await freshKey();
    await expect(
      runClaimedOperation<number>({
        key,
        params,
        replayCopy: "read_by_caller",
        attempt: async () => ({ kind: "lost" }),
      }),
    ).rejects.toThrow(`reward ${key.refId}: claimed row vanished`);
  });
});

describe("runClaimedOperation: an operation with an outside call (claimed, then finish)", () => {
  it("the winner's finish runs once on the fresh row after the claim committed; its response gets the copy", async () => {
    const key = await freshKey("topup");
    const { operation, finished } = outsideCallOperation(key);
    const ran = wonOrThrow(await runClaimedOperation(operation));
    expect(finished).toEqual([expect.objectContaining({ status: "initiated", fencingToken: 1, response: null })]);
    const response = finishedResponse(finished[0]!.id);
    expect(ran).toEqual({ kind: "won", response, replayed: false, detail: finished[0]!.id });
    expect(await readCachedReplay(key, params)).toEqual({ kind: "replay", response });
    expect(fromClaimRun(ran)).toEqual({ kind: "response", response, replayed: false });
  });

  it("a response another door stored first is the winner's answer too, as a replay", async () => {
    const key = await freshKey("topup");
    const earlier = jsonStoredResponse(201, { reconciler: true });
    const { operation } = outsideCallOperation(key);
    const ran = await runClaimedOperation({
      ...operation,
      finish: async (entry) => {
        await storeResponse({ userId: key.userId, entryId: entry.id }, earlier);
        return operation.finish!(entry);
      },
    });
    expect(ran).toMatchObject({ kind: "won", response: earlier, replayed: true });
    expect(fromClaimRun(ran)).toEqual({ kind: "response", response: earlier, replayed: true });
  });

  it("losers of a claim still being worked on: a mismatch at once, else in progress after the wait, never a second finish", async () => {
    const key = await freshKey("topup");
    // The winner's claim, committed, its bank call still running: no response stored.
    await insertClaim(testPool(), requestOf(key, "the-winner"));
    const { operation, finished } = outsideCallOperation(key, { waitMs: 5_000 });
    const started = Date.now();
    const other = await runClaimedOperation({ ...operation, params: { amount: 20, currency: "USD" } });
    expect(other).toMatchObject({ kind: "existing", outcome: { kind: "mismatch", fields: ["amount"] } });
    expect(Date.now() - started).toBeLessThan(2_000);
    const waiting = await runClaimedOperation({ ...operation, waitMs: 300 });
    expect(waiting).toMatchObject({ kind: "existing", outcome: { kind: "in_progress", retryAfterS: 1 } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(finished).toEqual([]);
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("a waiting loser replays as soon as the winner stores its response, not at the end of its wait budget", async () => {
    const key = await freshKey("topup");
    const claimed = await insertClaim(testPool(), requestOf(key, "the-winner"));
    const { operation } = outsideCallOperation(key, { waitMs: 10_000 });
    const waiting = runClaimedOperation(operation).then((run) => ({ run, answeredAt: Date.now() }));
    await new Promise((resolve) => setTimeout(resolve, 150));
    await storeResponse({ userId: key.userId, entryId: claimed!.id }, { status: 201, body: "{}" });
    const storedAt = Date.now();
    const { run, answeredAt } = await waiting;
    expect(run).toMatchObject({ kind: "existing", outcome: { kind: "replay", response: { status: 201, body: "{}" } } });
    // The polling step is capped at 200 ms; a 10 s budget must not be slept through.
    expect(answeredAt - storedAt).toBeLessThan(2_000);
  });

  it("an attempt that claims for an operation without finish is a bug, thrown", async () => {
    const key = await freshKey("topup");
    const { operation } = outsideCallOperation(key);
    await expect(runClaimedOperation({ ...operation, finish: undefined })).rejects.toThrow(
      `topup ${key.refId}: an attempt claimed the key, and the operation has no finish`,
    );
  });
});

describe("runClaimedOperation: its own claim, found after a lost connection", () => {
  /**
   * The staging of a lost answer: the first attempt's claim commits, then its connection dies before the answer
   * arrives; the runner runs the attempt again, and the retried claim finds the key taken. `claimedAs` is the lease
   * owner the first attempt wrote (the run's own, unless a control says otherwise).
   */
  function lostAnswer(key: OperationKey, claimedAs?: string, overrides: Partial<ClaimedOperation<number>> = {}) {
    const staged = outsideCallOperation(key, overrides);
    let attempts = 0;
    const operation = {
      ...staged.operation,
      attempt: async (context: Parameters<ClaimedOperation<number>["attempt"]>[0]) => {
        attempts += 1;
        if (attempts > 1) return staged.operation.attempt(context);
        await insertClaim(testPool(), requestOf(key, claimedAs ?? context.leaseOwner));
        throw connectionLost();
      },
    };
    return { operation, finished: staged.finished };
  }

  it("a run whose claim committed while its answer was lost carries on as the winner: finish runs once, no 409", async () => {
    const key = await freshKey("topup");
    const { operation, finished } = lostAnswer(key);
    const ran = await runClaimedOperation(operation);
    expect(ran).toMatchObject({ kind: "won", replayed: false });
    expect(finished).toHaveLength(1);
    expect(await countRows(key.userId, key.type, key.refId)).toBe(1);
  });

  it("its own claim with other parameters is refused (mismatch), never carried on as the winner", async () => {
    const key = await freshKey("topup");
    const staged = lostAnswer(key);
    let attempts = 0;
    const ran = await runClaimedOperation({
      ...staged.operation,
      params: { amount: 20, currency: "USD" },
      // The first attempt writes the row with amount 10; the run asks with 20.
      attempt: async (context) => {
        attempts += 1;
        if (attempts === 1) return staged.operation.attempt(context);
        return { kind: "lost" };
      },
    });
    expect(ran).toMatchObject({ kind: "existing", outcome: { kind: "mismatch", fields: ["amount"] } });
    expect(staged.finished).toEqual([]);
  });

  it("once a response is stored, the row is a replay even for its own lease owner", async () => {
    const key = await freshKey("topup");
    const leaseOwner = `request-${freshRefId()}`;
    const staged = lostAnswer(key, undefined, { leaseOwner });
    let attempts = 0;
    const ran = await runClaimedOperation({
      ...staged.operation,
      attempt: async (context) => {
        attempts += 1;
        if (attempts > 1) {
          const row = await findEntryByKey(key);
          await storeResponse({ userId: key.userId, entryId: row!.id }, { status: 201, body: "{}" });
        }
        return staged.operation.attempt(context);
      },
    });
    expect(ran).toMatchObject({ kind: "existing", outcome: { kind: "replay" } });
    expect(staged.finished).toEqual([]);
  });

  it("a run that was not retried is a loser even when the row carries its lease owner (a worker id shared by runs)", async () => {
    const key = await freshKey("topup");
    const shared = `reconciler-${freshRefId()}`;
    await insertClaim(testPool(), requestOf(key, shared));
    const { operation, finished } = outsideCallOperation(key, { leaseOwner: shared });
    expect(await runClaimedOperation(operation)).toMatchObject({
      kind: "existing",
      outcome: { kind: "in_progress" },
    });
    expect(finished).toEqual([]);
  });

  it("negative control: the same lost answer, with a row the check cannot recognise as the run's, answers 409 in progress", async () => {
    // What the runner does without the own-lost-claim check: the row of its own commit is another request's to it.
    const key = await freshKey("topup");
    const { operation, finished } = lostAnswer(key, "not-the-runs-lease-owner");
    const ran = await runClaimedOperation(operation);
    expect(ran).toMatchObject({ kind: "existing", outcome: { kind: "in_progress" } });
    expect(() => expect(ran).toMatchObject({ kind: "won" })).toThrow();
    expect(finished).toEqual([]);
  });
});

describe("runClaimedOperation: refusals, the caller's transaction, the Redis copy", () => {
  /** An operation refused before any claim, unless the key has a row (a refund of a top-up that is not refundable). */
  const refusedUnlessTaken = (key: OperationKey, params: Record<string, number | string>) =>
    runClaimedOperation<number, string>({
      key,
      params,
      replayCopy: "read_by_caller",
      waitMs: 0,
      attempt: async () => ({ kind: "abandoned", detail: "not refundable", unlessKeyTaken: true }),
    });

  it("a refusal that stands only while the key is free: no row, the refusal; a row, the loser's answer", async () => {
    const key = await freshKey();
    expect(await refusedUnlessTaken(key, params)).toEqual({ kind: "abandoned", detail: "not refundable" });
    wonOrThrow(await runClaimedOperation(creditOperation(key)));
    expect(await refusedUnlessTaken(key, params)).toMatchObject({ kind: "existing", outcome: { kind: "replay" } });
    expect(await refusedUnlessTaken(key, { amount: 99, currency: "USD" })).toMatchObject({
      kind: "existing",
      outcome: { kind: "mismatch", fields: ["amount"] },
    });
    // Without `unlessKeyTaken` the operation's own refusal stands, whatever the key holds.
    const abandoned = await runClaimedOperation<number, string>({
      key,
      params,
      replayCopy: "read_by_caller",
      attempt: async () => ({ kind: "abandoned", detail: "over the cap" }),
    });
    expect(abandoned).toEqual({ kind: "abandoned", detail: "over the cap" });
  });

  it("on the caller's open transaction: the attempt runs once, and a loser reads the row on that transaction", async () => {
    const key = await freshKey("chargeback");
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      // A row only this transaction sees (uncommitted): a loser reading on the pool would find none.
      const mine = await insertClaim(client, requestOf(key, "caller"));
      let attempts = 0;
      const ran = await runClaimedOperation<number>({
        key,
        params,
        replayCopy: "none",
        waitMs: 0,
        db: client,
        attempt: async () => {
          attempts += 1;
          return (await insertClaimOrLose(client, requestOf(key, "caller")))
            ? { kind: "decided", response: null, detail: 0 }
            : { kind: "lost" };
        },
      });
      expect(ran).toMatchObject({ kind: "existing", entry: { id: mine!.id } });
      const conflict = Object.assign(new Error("could not serialize access"), { code: "40001" });
      await expect(
        runClaimedOperation<number>({
          key,
          params,
          replayCopy: "none",
          db: client,
          attempt: async () => {
            attempts += 1;
            throw conflict;
          },
        }),
      ).rejects.toBe(conflict);
      expect(attempts).toBe(2);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });

  it("replayCopy read: a copy answers before the ledger (`cached`); read_by_caller: the row answers, not the copy", async () => {
    const key = await freshKey();
    const first = wonOrThrow(await runClaimedOperation(creditOperation(key)));
    const row = await findEntryByKey(key);
    // The ledger's body changed behind the copy's back (test-only tampering): which one answers shows who was read.
    await testPool().query("UPDATE ledger_entries SET response_body = 'tampered' WHERE user_id = $1 AND id = $2", [
      key.userId,
      row!.id,
    ]);
    const read = { ...creditOperation(key), replayCopy: "read" } as const;
    expect(await runClaimedOperation(read)).toEqual({
      kind: "cached",
      outcome: { kind: "replay", response: first.response },
    });
    expect(await runClaimedOperation({ ...read, params: { amount: 1, currency: "USD" } })).toEqual({
      kind: "cached",
      outcome: { kind: "mismatch", fields: ["amount"] },
    });
    expect(await runClaimedOperation(creditOperation(key))).toMatchObject({
      kind: "existing",
      outcome: { kind: "replay", response: { status: 201, body: "tampered" } },
    });
  });

  it("replayCopy read with no copy yet: the attempt runs and wins, and its response gets the copy", async () => {
    const key = await freshKey();
    const read = { ...creditOperation(key), replayCopy: "read" } as const;
    const run = await runClaimedOperation(read);
    expect(run).toMatchObject({ kind: "won", response: { status: 201 }, replayed: false });
    expect(await findEntryByKey(key)).toMatchObject({ status: "succeeded" });
    expect(await readCachedReplay(key, params)).toMatchObject({ kind: "replay" });
  });

  it("replayCopy none: a winner's response gets no copy", async () => {
    const key = await freshKey();
    const { operation } = outsideCallOperation(key);
    expect(await runClaimedOperation({ ...operation, replayCopy: "none" })).toMatchObject({ kind: "won" });
    expect(await readCachedReplay(key, params)).toBeNull();
  });

  it("the attempt writes the operation's lease owner when it has one (the reconciler's worker id), else a fresh one per run", async () => {
    const owners: string[] = [];
    for (const leaseOwner of ["worker-1", undefined, undefined]) {
      const key = await freshKey("topup");
      const { operation } = outsideCallOperation(key, { leaseOwner });
      await runClaimedOperation({
        ...operation,
        attempt: (context) => {
          owners.push(context.leaseOwner);
          return operation.attempt(context);
        },
      });
      expect((await findEntryByKey(key))?.leaseOwner).toBe(owners.at(-1));
    }
    expect(owners[0]).toBe("worker-1");
    expect(new Set(owners).size).toBe(3);
  });

  it("replayCopy none: a loser's replay leaves no copy behind; read_by_caller refreshes it", async () => {
    const key = await freshKey();
    const claimed = await insertClaim(testPool(), requestOf(key, "the-winner"));
    await storeResponse({ userId: key.userId, entryId: claimed!.id }, { status: 201, body: "{}" });
    const { operation } = outsideCallOperation(key);
    expect(await runClaimedOperation({ ...operation, replayCopy: "none" })).toMatchObject({ kind: "existing" });
    expect(await readCachedReplay(key, params)).toBeNull();
    expect(await runClaimedOperation(operation)).toMatchObject({ kind: "existing" });
    expect(await readCachedReplay(key, params)).toMatchObject({ kind: "replay" });
  });
});

describe("awaitStoredEntry", () => {
  it("lists every differing field (currency too)", async () => {
    const key = await freshKey("topup");
    const claimed = await insertClaim(testPool(), requestOf(key, "w"));
    const other = await awaitStoredEntry(claimed!, { amount: 5, currency: "EUR" }, { waitMs: 0 });
    expect(other.outcome).toEqual({ kind: "mismatch", fields: ["amount", "currency"] });
  });

  it("a replay refreshes the response's Redis copy unless told not to", async () => {
    const key = await freshKey("topup");
    const claimed = await insertClaim(testPool(), requestOf(key, "w"));
    await storeResponse({ userId: key.userId, entryId: claimed!.id }, { status: 201, body: "{}" });
    const row = (await findEntryByKey(key))!;
    expect((await awaitStoredEntry(row, params, { refreshReplayCopy: false })).outcome.kind).toBe("replay");
    expect(await readCachedReplay(key, params)).toBeNull();
    expect((await awaitStoredEntry(row, params)).outcome.kind).toBe("replay");
    expect(await readCachedReplay(key, params)).toEqual({ kind: "replay", response: { status: 201, body: "{}" } });
  });

  it("a row that disappears while the loser waits is the one 'claimed row vanished' bug, thrown", async () => {
    const key = await freshKey("topup");
    // A row as read a moment ago, which the database does not hold (rows are never deleted: only a bug does this).
    const claimed = await insertClaim(testPool(), requestOf(await freshKey("topup"), "w"));
    const ghost: LedgerEntry = { ...claimed!, userId: key.userId, refId: key.refId };
    await expect(awaitStoredEntry(ghost, params, { waitMs: 1_000 })).rejects.toThrow(
      `topup ${key.refId}: claimed row vanished`,
    );
  });
});

describe("fromClaimRun", () => {
  it("a winner of an operation that answers a request always stored a response: none is a bug, thrown", () => {
    expect(() => fromClaimRun({ kind: "won", response: null, replayed: false, detail: 1 })).toThrow(
      "the winner of an operation that answers a request stored no first response",
    );
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
      entry: { id: claimed.id, fencingToken: 2, leaseOwner: "taker", status: "initiated" },
    });
    expect(taken?.ageMs).toBeGreaterThanOrEqual(0);
    expect(await countExpiredUnfinishedEntries([user.id])).toBe(0);
    expect(await takeOverExpiredEntry({ workerId: "second", leaseMs: 30_000, userIds: [user.id] })).toBeNull();
  });
});

describe("movedOrThrow", () => {
  it("returns the moved row and throws, naming the operation, when the transition did not move it", async () => {
    const key = await freshKey();
    wonOrThrow(await runClaimedOperation(creditOperation(key)));
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
