/**
 * The admin page's "needs attention" list of flagged top-ups (lib/admin/list-flagged-topups.ts) against real
 * PostgreSQL: a top-up whose settlement failed SETTLE_ATTEMPTS_MAX times is listed with its count and last error;
 * one below the limit is not (negative control: the flag, not the failure count alone, puts a row there); a
 * flagged row that reached its final state since no longer needs a person.
 */
import { describe, expect, it } from "vitest";
import { listFlaggedTopups } from "../../lib/admin/list-flagged-topups";
import { completeEntry, recordSettleFailure } from "../../lib/ledger/transitions";
import { createTestUser } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId } from "../helpers/ledger";

const ATTEMPTS_MAX = 3;

async function topupWithFailures(userId: string, failures: number) {
  const refId = freshRefId("flag");
  const claim = await claimEntry(claimRequest(userId, { refId }));
  const ref = { userId, entryId: claim.id };
  for (let i = 1; i <= failures; i++) await recordSettleFailure(ref, `credit refused (${i})`, ATTEMPTS_MAX);
  return { refId, ref };
}

describe("listFlaggedTopups", () => {
  it("lists an unfinished top-up flagged after SETTLE_ATTEMPTS_MAX failures, with the count and the last error", async () => {
    const user = await createTestUser();
    const flagged = await topupWithFailures(user.id, ATTEMPTS_MAX);
    const below = await topupWithFailures(user.id, ATTEMPTS_MAX - 1);
    const mine = (await listFlaggedTopups(100)).filter((row) => row.userId === user.id);
    expect(mine.map((row) => row.refId)).toEqual([flagged.refId]);
    expect(mine[0]).toMatchObject({
      userEmail: user.email,
      status: "initiated",
      settleFailures: ATTEMPTS_MAX,
      settleLastError: `credit refused (${ATTEMPTS_MAX})`,
    });
    expect(Date.parse(mine[0]!.settleFlaggedAt)).toBeGreaterThan(0);
    expect(mine.some((row) => row.refId === below.refId)).toBe(false);
  });

  it("drops a flagged top-up once it reached its final state", async () => {
    const user = await createTestUser();
    const flagged = await topupWithFailures(user.id, ATTEMPTS_MAX);
    expect((await listFlaggedTopups(100)).some((row) => row.refId === flagged.refId)).toBe(true);
    await completeEntry(flagged.ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
    expect((await listFlaggedTopups(100)).some((row) => row.refId === flagged.refId)).toBe(false);
  });
});
