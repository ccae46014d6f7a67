/**
 * Negative controls kept runnable: the same concurrency scenario run against the real claim and against the
 * classic broken alternative, check-then-insert; and the same staged race answered by the claim runner's loser,
 * which reads the key's row in a statement of its own, and by a loser that reads it inside the claim's statement. The
 * scenario's assertions pass for the real code and fail for the broken alternatives, which is the evidence that the
 * concurrency tests bite.
 */
import { describe, expect, it } from "vitest";
import type pg from "pg";
import { insertClaim, insertClaimOrLose, type ClaimRequest } from "../../lib/ledger/claim";
import { runClaimedOperation } from "../../lib/ledger/claim-runner";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry } from "../../lib/ledger/entry";
import { fingerprint } from "../../lib/ledger/fingerprint";
import { storeResponse } from "../../lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { claimRequest, countRows, dedicatedClient } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";

/** Resolves for everyone once all sessions have arrived: the sessions are released in the same tick. */
type Barrier = () => Promise<void>;
type ClaimImpl = (client: pg.Client, request: ClaimRequest, barrier: Barrier) => Promise<LedgerEntry | null>;

function barrierFor(count: number): Barrier {
  let arrived = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return () => {
    arrived += 1;
    if (arrived === count) release();
    return released;
  };
}

/** The real claim: one INSERT ... ON CONFLICT DO NOTHING RETURNING. */
const realClaim: ClaimImpl = async (client, request, barrier) => {
  await barrier();
  return insertClaim(client, request);
};

/**
 * The broken pattern: read, then insert if nothing was seen. The barrier makes every session finish its read
 * before any inserts, which is the interleaving real traffic produces sometimes and this test always.
 */
const checkThenInsert: ClaimImpl = async (client, request, barrier) => {
  const { key } = request;
  const seen = await client.query("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3", [
    key.userId,
    key.type,
    key.refId,
  ]);
  await barrier();
  if (seen.rowCount) return null;
  const inserted = await client.query(
    `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING ${ENTRY_COLUMNS}`,
    [
      key.userId,
      key.type,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
    ],
  );
  return toLedgerEntry(inserted.rows[0]!);
};

/** C10's scenario: N sessions claim one key at once. Returns what happened. */
async function concurrentSameKey(impl: ClaimImpl, sessions: number) {
  const user = await createTestUser();
  const request = claimRequest(user.id);
  const clients = await Promise.all(Array.from({ length: sessions }, (_, i) => dedicatedClient(`neg-${i}`)));
  const barrier = barrierFor(sessions);
  try {
    // Every session reaches the barrier (its read done, for check-then-insert) before any goes on.
    const results = await Promise.allSettled(clients.map((client) => impl(client, request, barrier)));
    return {
      winners: results.filter((r) => r.status === "fulfilled" && r.value !== null).length,
      errors: results.filter((r) => r.status === "rejected").length,
      rows: await countRows(user.id, request.key.type, request.key.refId),
    };
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/** The assertions of the concurrency tests: exactly one winner, no error, one row. */
function assertExactlyOnce(outcome: { winners: number; errors: number; rows: number }): void {
  expect(outcome).toEqual({ winners: 1, errors: 0, rows: 1 });
}

describe("negative control: check-then-insert instead of the claim", () => {
  it("the claim passes the concurrency assertions (5 sessions, one key)", async () => {
    assertExactlyOnce(await concurrentSameKey(realClaim, 5));
  });

  it("check-then-insert fails them: every session saw nothing, so all insert and the losers hit 23505", async () => {
    const outcome = await concurrentSameKey(checkThenInsert, 5);
    expect(() => assertExactlyOnce(outcome)).toThrow();
    expect(outcome.errors).toBe(4);
  });
});

/**
 * C02's race, staged: the winner's claim is held uncommitted on its own session, `loser` runs against the same key
 * and is seen blocked on it in pg_stat_activity, then the winner stores its first response and commits. Returns what
 * the loser answered, and the winner's response.
 */
async function loserOfHeldClaim<T>(loser: (request: ClaimRequest) => Promise<T>) {
  const user = await createTestUser();
  const request = claimRequest(user.id, { leaseOwner: "the-winner" });
  const winner = await dedicatedClient("loser-control-winner");
  const response = { status: 201, body: `{"winner":"${request.key.refId}"}` };
  try {
    await winner.query("BEGIN");
    const claimed = await insertClaim(winner, request);
    const pid = (await winner.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const answering = loser({ ...request, leaseOwner: "the-loser" });
    await waitForBlockedSessions({ blockedBy: pid }, 1);
    await storeResponse({ userId: user.id, entryId: claimed!.id }, response, winner);
    await winner.query("COMMIT");
    return { answer: await answering, response };
  } finally {
    await winner.end();
  }
}

/** The claim runner's loser: its claim finds the key taken, and the row is read in a statement of its own. */
const runnerLoser = (request: ClaimRequest) =>
  runClaimedOperation<null>({
    key: request.key,
    params: request.params,
    replayCopy: "read_by_caller",
    waitMs: 5_000,
    attempt: async ({ leaseOwner }) =>
      (await insertClaimOrLose(testPool(), { ...request, leaseOwner }))
        ? { kind: "decided", response: null, detail: null }
        : { kind: "lost" },
  });

/**
 * The broken loser: the claim and the read of the existing row in one statement (a CTE). The statement's snapshot is
 * taken before it waits for the winner, so after the winner's commit the INSERT finds the key taken and the SELECT,
 * reading that older snapshot, finds no row either (contract section 1). Returns the row ids it saw.
 */
async function oneStatementLoser(request: ClaimRequest): Promise<number[]> {
  const { key } = request;
  const result = await testPool().query<{ id: number }>(
    `WITH claimed AS (
       INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
       ON CONFLICT (user_id, type, ref_id) DO NOTHING RETURNING id)
     SELECT id FROM claimed
     UNION ALL
     SELECT id FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3`,
    [
      key.userId,
      key.type,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
    ],
  );
  return result.rows.map((row) => row.id);
}

describe("negative control: the loser's read inside the claim's own statement", () => {
  it("the runner's loser, blocked on the winner's claim, replays the winner's response once it commits", async () => {
    const { answer, response } = await loserOfHeldClaim(runnerLoser);
    expect(answer).toMatchObject({ kind: "existing", outcome: { kind: "replay", response } });
  });

  it("a loser that reads in the claim's statement sees no row at all after the wait: nothing to replay", async () => {
    const { answer } = await loserOfHeldClaim(oneStatementLoser);
    // The runner's answer above; here the row the winner committed is invisible to the statement that waited on it.
    expect(answer).toEqual([]);
  });
});
