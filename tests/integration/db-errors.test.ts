/**
 * The error classifier against REAL PostgreSQL errors (contract section 8, case C01, docs/development.md note 2).
 *
 * Every error here is raised by the database, through each access path the project uses: Prisma raw SQL
 * ($executeRaw / $queryRaw), a Prisma model call, and plain `pg` on the pool Prisma shares (lib/db.ts). The same
 * database error must get the same verdict through all three. Deadlocks and serialization failures are staged
 * deterministically (locks held, then wait until pg_stat_activity shows the other session blocked; no sleeps),
 * and `withTransactionRetry` is shown to retry them and commit.
 *
 * Needs process.env.DATABASE_URL (set by tests/setup/global-setup.ts) pointing at a local, migrated database.
 * Each test makes its own users with random ids, so this file runs in parallel with others.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { DatabaseError, type PoolClient } from "pg";
import { pool, prisma, withTransaction } from "../../lib/db";
import { CLAIM_INDEX } from "../../lib/ledger/constants";
import { classifyDbError, type DbErrorVerdict } from "../../lib/ledger/db-errors";
import { withTransactionRetry, type TransactionRetryInfo } from "../../lib/ledger/retry";
import { waitFor } from "../helpers/wait";

/**
 * `UNIQUE (user_id, bank_charge_id)` on ledger_entries (migration 20261129000000_init): a bank charge belongs to one
 * row. A 23505 on it is a bug, never a lost claim (contract section 8).
 */
const BANK_CHARGE_INDEX = "ledger_entries_user_id_bank_charge_id_key";

/** Longest wait for another session to show up as blocked. Lock waits begin within milliseconds; 10 s is slack. */
const BLOCKED_WAIT_MS_MAX = 10_000;

/** Refuses to run against anything but a local database (style.md: never a shared or remote one). */
function assertLocalDatabase(): void {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL is not set: run through the integration project (its global setup sets it)");
  const host = new URL(url).hostname;
  if (!["127.0.0.1", "localhost", "[::1]", "::1", ""].includes(host)) {
    throw new Error(`refusing to run database tests against non-local host ${host}`);
  }
}

beforeAll(() => {
  assertLocalDatabase();
});

/** Creates a user with a random id and email, and a USD wallet holding `balanceMinor`. Returns the user id. */
async function createUser(balanceMinor = 0): Promise<string> {
  const id = `dberr-${randomUUID()}`;
  await pool().query(`INSERT INTO "user" (id, name, email) VALUES ($1, $2, $3)`, [
    id,
    "db-errors test",
    `${id}@test.invalid`,
  ]);
  await pool().query(`INSERT INTO wallets (user_id, currency, balance_minor) VALUES ($1, 'USD', $2)`, [
    id,
    balanceMinor,
  ]);
  return id;
}

function randomRefId(prefix: string): string {
  return `${prefix}-${randomBytes(8).toString("hex")}`;
}

function fingerprint(): string {
  return randomBytes(32).toString("hex");
}

/** A valid top-up row (the schema's CHECKs: ref_id pattern, amount > 0, 64 hex fingerprint). */
interface Row {
  userId: string;
  refId: string;
  amountMinor: number;
  fingerprint: string;
  bankChargeId: string | null;
}

function row(userId: string, overrides: Partial<Row> = {}): Row {
  return {
    userId,
    refId: randomRefId("ref"),
    amountMinor: 500,
    fingerprint: fingerprint(),
    bankChargeId: null,
    ...overrides,
  };
}

const INSERT_ROW_SQL = `
  INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, bank_charge_id)
  VALUES ($1, 'topup', $2, $3, 'USD', $4, '{}'::jsonb, $5)`;

/** The three access paths, each inserting the same row. */
const insertVia = {
  pg: (r: Row) => pool().query(INSERT_ROW_SQL, [r.userId, r.refId, r.amountMinor, r.fingerprint, r.bankChargeId]),
  prismaRaw: (r: Row) =>
    prisma().$executeRaw`
      INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, bank_charge_id)
      VALUES (${r.userId}, 'topup', ${r.refId}, ${r.amountMinor}, 'USD', ${r.fingerprint}, '{}'::jsonb, ${r.bankChargeId})`,
  prismaModel: (r: Row) =>
    prisma().ledgerEntry.create({
      data: {
        userId: r.userId,
        type: "topup",
        refId: r.refId,
        amountMinor: BigInt(r.amountMinor),
        currency: "USD",
        fingerprint: r.fingerprint,
        params: {},
        bankChargeId: r.bankChargeId,
      },
    }),
};

/** What the promise rejected with; fails the test if it resolved. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the database to refuse the statement, but it succeeded");
}

/** Asserts the shapes docs/development.md note 2 describes, so that a Prisma or pg upgrade that changes them is noticed. */
function expectPrismaShape(error: unknown, prismaCode: string, sqlstate: string): void {
  expect(error).toMatchObject({ name: "PrismaClientKnownRequestError", code: prismaCode });
  expect(Object.hasOwn(error as object, "cause")).toBe(false);
  const adapterError = (error as { meta?: { driverAdapterError?: { name?: string; cause?: unknown } } }).meta
    ?.driverAdapterError;
  expect(adapterError?.name).toBe("DriverAdapterError");
  expect(adapterError?.cause).toMatchObject({ originalCode: sqlstate });
}

function expectPgShape(error: unknown, sqlstate: string): void {
  expect(error).toBeInstanceOf(DatabaseError);
  expect(error).toMatchObject({ code: sqlstate });
}

/** Classifies the three errors and asserts that all three verdicts equal `expected`. */
function expectSameVerdict(
  errors: { pg: unknown; prismaRaw: unknown; prismaModel: unknown },
  expected: DbErrorVerdict,
) {
  expect({
    pg: classifyDbError(errors.pg),
    prismaRaw: classifyDbError(errors.prismaRaw),
    prismaModel: classifyDbError(errors.prismaModel),
  }).toEqual({ pg: expected, prismaRaw: expected, prismaModel: expected });
}

async function backendPid(client: PoolClient): Promise<number> {
  const result = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return result.rows[0]!.pid;
}

/**
 * Resolves once PostgreSQL reports session `waiterPid` blocked on a lock held by `holderPid` (pg_blocking_pids).
 * Polls the server with no pause: each round trip is the pace. Throws after BLOCKED_WAIT_MS_MAX.
 */
async function waitUntilBlocked(waiterPid: number, holderPid: number): Promise<void> {
  await waitFor(
    async () => {
      const result = await pool().query<{ blocked: boolean }>(
        `SELECT $2::int = ANY (pg_blocking_pids($1::int)) AS blocked`,
        [waiterPid, holderPid],
      );
      return result.rows[0]?.blocked === true;
    },
    (blocked) => blocked,
    { what: `session ${waiterPid} to block on session ${holderPid}`, timeoutMs: BLOCKED_WAIT_MS_MAX, intervalMs: 0 },
  );
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function balanceOf(userId: string): Promise<number> {
  const result = await pool().query<{ balance_minor: number }>(`SELECT balance_minor FROM wallets WHERE user_id = $1`, [
    userId,
  ]);
  return result.rows[0]!.balance_minor;
}

/** BEGIN ISOLATION LEVEL REPEATABLE READ ... COMMIT on one pooled connection; rolls back and rethrows on error. */
async function withRepeatableRead<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool().connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

describe("classifyDbError on real PostgreSQL errors", () => {
  it("C01: a 23505 on the claim index is already_claimed through Prisma raw, a Prisma model call and plain pg", async () => {
    const userId = await createUser();
    const claimed = row(userId);
    await insertVia.pg(claimed);

    const errors = {
      pg: await rejectionOf(insertVia.pg(claimed)),
      prismaRaw: await rejectionOf(insertVia.prismaRaw(claimed)),
      prismaModel: await rejectionOf(insertVia.prismaModel(claimed)),
    };
    expectPgShape(errors.pg, "23505");
    expect(errors.pg).toMatchObject({ constraint: CLAIM_INDEX });
    expectPrismaShape(errors.prismaRaw, "P2010", "23505");
    expectPrismaShape(errors.prismaModel, "P2002", "23505");
    expectSameVerdict(errors, { kind: "already_claimed" });

    // $queryRaw, and the pg error wrapped by an application layer, give the same verdict.
    const viaQueryRaw = await rejectionOf(
      prisma().$queryRaw`
        INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params)
        VALUES (${userId}, 'topup', ${claimed.refId}, 500, 'USD', ${claimed.fingerprint}, '{}'::jsonb)
        RETURNING id`,
    );
    expectPrismaShape(viaQueryRaw, "P2010", "23505");
    expect(classifyDbError(viaQueryRaw)).toEqual({ kind: "already_claimed" });
    const wrapped = new Error("claim failed", { cause: new Error("ledger", { cause: errors.pg }) });
    expect(classifyDbError(wrapped)).toEqual({ kind: "already_claimed" });

    // Exactly one row exists: every refused insert wrote nothing.
    const count = await pool().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = 'topup' AND ref_id = $2`,
      [userId, claimed.refId],
    );
    expect(count.rows[0]?.n).toBe(1);
  });

  it("C01(b): a 23505 on the bank-charge index is unique_violation (never already_claimed) through all three paths", async () => {
    const userId = await createUser();
    const chargeId = randomRefId("ch");
    await insertVia.pg(row(userId, { bankChargeId: chargeId }));

    // A different claim key (new ref_id) carrying the same bank charge id.
    const errors = {
      pg: await rejectionOf(insertVia.pg(row(userId, { bankChargeId: chargeId }))),
      prismaRaw: await rejectionOf(insertVia.prismaRaw(row(userId, { bankChargeId: chargeId }))),
      prismaModel: await rejectionOf(insertVia.prismaModel(row(userId, { bankChargeId: chargeId }))),
    };
    expectPgShape(errors.pg, "23505");
    expectPrismaShape(errors.prismaRaw, "P2010", "23505");
    expectPrismaShape(errors.prismaModel, "P2002", "23505");
    expectSameVerdict(errors, { kind: "unique_violation", constraint: BANK_CHARGE_INDEX });
  });

  it("a 23514 (wallet balance below 0) is check_violation on wallets_balance_range through all three paths", async () => {
    const userId = await createUser(0);
    const errors = {
      pg: await rejectionOf(
        pool().query(`UPDATE wallets SET balance_minor = balance_minor - 5 WHERE user_id = $1`, [userId]),
      ),
      prismaRaw: await rejectionOf(
        prisma().$executeRaw`UPDATE wallets SET balance_minor = balance_minor - 5 WHERE user_id = ${userId}`,
      ),
      prismaModel: await rejectionOf(
        prisma().wallet.update({ where: { userId }, data: { balanceMinor: { decrement: BigInt(5) } } }),
      ),
    };
    expectPgShape(errors.pg, "23514");
    expectPrismaShape(errors.prismaRaw, "P2010", "23514");
    expectPrismaShape(errors.prismaModel, "P2039", "23514");
    expectSameVerdict(errors, { kind: "check_violation", constraint: "wallets_balance_range" });
    expect(await balanceOf(userId)).toBe(0);
  });

  it("a 23503 (ledger row for a missing user) is foreign_key_violation through all three paths", async () => {
    const missingUser = `dberr-missing-${randomUUID()}`;
    const errors = {
      pg: await rejectionOf(insertVia.pg(row(missingUser))),
      prismaRaw: await rejectionOf(insertVia.prismaRaw(row(missingUser))),
      prismaModel: await rejectionOf(insertVia.prismaModel(row(missingUser))),
    };
    expectPgShape(errors.pg, "23503");
    expectPrismaShape(errors.prismaRaw, "P2010", "23503");
    expectPrismaShape(errors.prismaModel, "P2003", "23503");
    expectSameVerdict(errors, { kind: "foreign_key_violation", constraint: "ledger_entries_user_id_fkey" });
  });

  it("a 40001 under REPEATABLE READ is retryable through plain pg and Prisma (raw and model)", async () => {
    const userId = await createUser(100);
    // The session reads (taking its snapshot), another session commits an update to the same row, then the first
    // session updates it: PostgreSQL refuses with 40001 at once, no waiting involved.
    const viaPg = await rejectionOf(
      withRepeatableRead(async (client) => {
        await client.query(`SELECT balance_minor FROM wallets WHERE user_id = $1`, [userId]);
        await pool().query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userId]);
        await client.query(`UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = $1`, [userId]);
      }),
    );
    const viaPrismaRaw = await rejectionOf(
      prisma().$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT balance_minor FROM wallets WHERE user_id = ${userId}`;
          await pool().query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userId]);
          await tx.$executeRaw`UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = ${userId}`;
        },
        { isolationLevel: "RepeatableRead" },
      ),
    );
    const viaPrismaModel = await rejectionOf(
      prisma().$transaction(
        async (tx) => {
          await tx.wallet.findUnique({ where: { userId } });
          await pool().query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userId]);
          await tx.wallet.update({ where: { userId }, data: { balanceMinor: { increment: BigInt(10) } } });
        },
        { isolationLevel: "RepeatableRead" },
      ),
    );
    expectPgShape(viaPg, "40001");
    expectPrismaShape(viaPrismaRaw, "P2010", "40001");
    expectPrismaShape(viaPrismaModel, "P2034", "40001");
    expectSameVerdict(
      { pg: viaPg, prismaRaw: viaPrismaRaw, prismaModel: viaPrismaModel },
      { kind: "retryable", sqlstate: "40001" },
    );
    // Only the three concurrent +1 updates landed; every +10 was rolled back.
    expect(await balanceOf(userId)).toBe(103);
  });
});

describe("withTransactionRetry on real PostgreSQL errors", () => {
  it("a real deadlock (40P01) aborts the first attempt; the retry commits", async () => {
    const userA = await createUser(1000);
    const userB = await createUser(1000);
    const holder = await pool().connect();
    const retries: TransactionRetryInfo[] = [];
    const firstAttemptPid = deferred<number>();
    let attempts = 0;
    let retried: Promise<number> | undefined;
    try {
      const holderPid = await backendPid(holder);
      // Session X (holder) locks A.
      await holder.query("BEGIN");
      await holder.query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userA]);

      // Session Y (the retried transaction) locks B, then asks for A and waits for X.
      retried = withTransactionRetry(
        () =>
          withTransaction(async (client) => {
            attempts += 1;
            const attempt = attempts;
            await client.query(`UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = $1`, [userB]);
            if (attempt === 1) firstAttemptPid.resolve(await backendPid(client));
            await client.query(`UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = $1`, [userA]);
            return attempt;
          }),
        { onRetry: (info) => retries.push(info) },
      );
      retried.catch(() => {}); // Awaited below; this only keeps an early rejection from being reported as unhandled.

      const yPid = await firstAttemptPid.promise;
      await waitUntilBlocked(yPid, holderPid);
      // X now asks for B, held by Y: a cycle. Y has been waiting longer, so its deadlock_timeout expires first and
      // PostgreSQL breaks the cycle by aborting Y (the session that runs the check) with 40P01. X then gets B.
      await holder.query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userB]);
      await holder.query("COMMIT");

      // The second attempt ran after X committed and succeeded.
      await expect(retried).resolves.toBe(2);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
      await retried?.catch(() => {});
    }
    expect(attempts).toBe(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, sqlstate: "40P01" });
    expectPgShape(retries[0]?.error, "40P01");
    expect(classifyDbError(retries[0]?.error)).toEqual({ kind: "retryable", sqlstate: "40P01" });
    // X's +1 and the retry's +10 landed on both rows; the aborted attempt's +10 on B did not.
    expect(await balanceOf(userA)).toBe(1011);
    expect(await balanceOf(userB)).toBe(1011);
  });

  it("a real serialization failure (40001) aborts the first attempt; the retry commits (pg and Prisma)", async () => {
    const userId = await createUser(100);
    const retries: TransactionRetryInfo[] = [];
    let attempts = 0;
    const result = await withTransactionRetry(
      () =>
        withRepeatableRead(async (client) => {
          attempts += 1;
          await client.query(`SELECT balance_minor FROM wallets WHERE user_id = $1`, [userId]);
          if (attempts === 1) {
            await pool().query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userId]);
          }
          await client.query(`UPDATE wallets SET balance_minor = balance_minor + 10 WHERE user_id = $1`, [userId]);
          return attempts;
        }),
      { onRetry: (info) => retries.push(info) },
    );
    expect(result).toBe(2);
    expect(retries.map((r) => [r.attempt, r.sqlstate])).toEqual([[1, "40001"]]);
    expectPgShape(retries[0]?.error, "40001");
    expect(await balanceOf(userId)).toBe(111);

    // The same through a Prisma interactive transaction: its P2034 carries the 40001 in meta.driverAdapterError.
    const prismaRetries: TransactionRetryInfo[] = [];
    let prismaAttempts = 0;
    await withTransactionRetry(
      () =>
        prisma().$transaction(
          async (tx) => {
            prismaAttempts += 1;
            await tx.wallet.findUnique({ where: { userId } });
            if (prismaAttempts === 1) {
              await pool().query(`UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1`, [userId]);
            }
            await tx.wallet.update({ where: { userId }, data: { balanceMinor: { increment: BigInt(10) } } });
          },
          { isolationLevel: "RepeatableRead" },
        ),
      { onRetry: (info) => prismaRetries.push(info) },
    );
    expect(prismaAttempts).toBe(2);
    expect(prismaRetries.map((r) => [r.attempt, r.sqlstate])).toEqual([[1, "40001"]]);
    expectPrismaShape(prismaRetries[0]?.error, "P2034", "40001");
    expect(await balanceOf(userId)).toBe(122);
  });

  it("a real 23505 on the claim index is rethrown at once, unchanged, without a retry", async () => {
    const userId = await createUser();
    const claimed = row(userId);
    await insertVia.pg(claimed);
    let attempts = 0;
    const error = await rejectionOf(
      withTransactionRetry(() =>
        withTransaction(async (client) => {
          attempts += 1;
          await client.query(INSERT_ROW_SQL, [userId, claimed.refId, 500, claimed.fingerprint, null]);
        }),
      ),
    );
    expect(attempts).toBe(1);
    expectPgShape(error, "23505");
    expect(classifyDbError(error)).toEqual({ kind: "already_claimed" });
  });
});
