/**
 * No hot row under the books (docs/decisions/058; contract section 13): every top-up's credit posts to the same house
 * account, `bank_clearing`, yet a credit of one user never waits for another user's credit still in flight, because a
 * house account has no balance row to update: its balance is the sum of its postings.
 *
 * Staged, not timed: user A's credit is made and its transaction held open (its postings to `bank_clearing` written,
 * uncommitted); then user B's credit runs. It must finish while A's is still open. The negative control adds what
 * the usual design does, a house balance row updated by every posting (a trigger), and the same staging then finds
 * B's credit blocked behind A's transaction (pg_blocking_pids). Each runs in a database of its own (a scratch
 * database migrated by the project's migrator), so the control's trigger touches no other test.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { migrate } from "@/lib/migrate";
import { createScratchDatabase, dropScratchDatabases } from "../helpers/db";

afterAll(async () => {
  await dropScratchDatabases();
});

const HOT_ROW_TRIGGER = `
CREATE TABLE house_balances (account text PRIMARY KEY, balance_minor bigint NOT NULL);
INSERT INTO house_balances SELECT name, 0 FROM ledger_accounts WHERE kind = 'house';
CREATE FUNCTION house_balance_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE house_balances SET balance_minor = balance_minor + NEW.amount_minor WHERE account = NEW.account;
  RETURN NULL;
END $$;
CREATE TRIGGER house_balance_update AFTER INSERT ON ledger_postings
  FOR EACH ROW WHEN (NEW.account <> 'wallet') EXECUTE FUNCTION house_balance_update();`;

/** A migrated database of its own with two users, each with a claimed top-up of 1000 waiting for its credit. */
async function twoClaimedTopups(withHotRow: boolean) {
  const url = await createScratchDatabase("books_hot_row");
  await migrate(url);
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  try {
    if (withHotRow) await setup.query(HOT_ROW_TRIGGER);
    const entries: { userId: string; entryId: string }[] = [];
    for (const userId of ["user_a", "user_b"]) {
      await setup.query(`INSERT INTO "user" (id, name, email, role) VALUES ($1, $1, $1 || '@example.test', 'user')`, [
        userId,
      ]);
      const claimed = await setup.query<{ id: string }>(
        `SELECT (c).id::text AS id FROM ledger_claim(p_user_id => $1, p_type => 'topup', p_ref_id => 'r1',
           p_amount_minor => 1000, p_currency => 'USD', p_fingerprint => repeat('f', 64), p_params => '{}'::jsonb,
           p_actor => 'request') AS c`,
        [userId],
      );
      entries.push({ userId, entryId: claimed.rows[0]!.id });
    }
    return { url, entries };
  } finally {
    await setup.end();
  }
}

const CREDIT = `SELECT (m.entry).id FROM ledger_move_entry(p_user_id => $1, p_entry_id => $2, p_to_status => 'succeeded',
  p_actor => 'request', p_credit => true) AS m`;

/**
 * Polls every 5 ms (on the holder's own connection) until B's credit has finished or a session waits for the
 * holder's locks (pg_blocking_pids); throws after 15 s.
 */
async function firstOf(finished: () => boolean, holder: pg.Client, holderPid: number): Promise<"finished" | "blocked"> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (finished()) return "finished";
    const waiting = await holder.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))",
      [holderPid],
    );
    if ((waiting.rows[0]?.n ?? 0) > 0) return "blocked";
    if (Date.now() > deadline) throw new Error("the second credit neither finished nor waited for 15 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Holds A's credit open, runs B's: "finished" when B's commits first, "blocked" when it waits for A's. */
async function stageTwoCredits(withHotRow: boolean): Promise<"finished" | "blocked"> {
  const { url, entries } = await twoClaimedTopups(withHotRow);
  const [a, b] = entries as [{ userId: string; entryId: string }, { userId: string; entryId: string }];
  const holder = new pg.Client({ connectionString: url, application_name: "books-hot-row-holder" });
  const other = new pg.Client({ connectionString: url, application_name: "books-hot-row-other" });
  await holder.connect();
  await other.connect();
  try {
    await holder.query("BEGIN");
    expect((await holder.query(CREDIT, [a.userId, a.entryId])).rowCount).toBe(1);
    const holderPid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    await other.query("SET statement_timeout = '20s'");
    let finished = false;
    const credit = other.query(CREDIT, [b.userId, b.entryId]).then(() => {
      finished = true;
    });
    const outcome = await firstOf(() => finished, holder, holderPid);
    await holder.query("COMMIT");
    await credit;
    return outcome;
  } finally {
    await holder.end();
    await other.end();
  }
}

describe("no hot row under the books", () => {
  it("a credit posting to bank_clearing finishes while another user's credit to it is still open", async () => {
    expect(await stageTwoCredits(false)).toBe("finished");
  });

  it("negative control: with a house balance row updated by every posting, the second credit waits for the first", async () => {
    expect(await stageTwoCredits(true)).toBe("blocked");
  });
});
