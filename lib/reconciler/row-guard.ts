/**
 * What keeps one row from holding up a reconciler pass (case C29): a bound on how long the row's statements may
 * wait, and the judgement of an error its work threw. A row that times out behind a locked wallet, or that the
 * database refuses with an unexpected SQLSTATE, costs that row one bounded attempt; the pass counts it on the row
 * and goes on with the next one. Only a database that cannot be reached at all stops the pass.
 */
import { pool, withTransaction } from "../db";
import { env } from "../env";
import { classifyDbError, withTransactionRetry, type Queryable } from "../ledger";

/**
 * Longest time, in ms, one statement of a row's settlement may run, lock waits included: 2000. The statements that
 * settle a row take a few milliseconds (docs/development.md note 24: ~4 ms per transaction at 32 clients), and a
 * wallet's lock is held by live traffic only for one such statement at a time: even 50 concurrent operations on one
 * wallet (note 17) queue for ~200 ms. Two seconds is ten times that; a lock held longer belongs to a stuck
 * transaction (killed after DB_IDLE_IN_TRANSACTION_TIMEOUT_MS when idle), and waiting for it would stall every
 * other user's row behind it. It stays far inside the row's lease (LEASE_MS, 30 s), so no other reconciler takes
 * the row over while this one waits, and below the session's own bound (DB_STATEMENT_TIMEOUT_MS, 15 s), which is
 * otherwise all that limits a statement of the pass.
 */
export const ROW_STATEMENT_TIMEOUT_MS = 2000;

/**
 * The statement timeout of a row's transaction, in ms: {@link ROW_STATEMENT_TIMEOUT_MS}, never above the session's
 * DB_STATEMENT_TIMEOUT_MS (a deployment that sets that lower keeps its own). Null would leave the row with the
 * session's timeout only (the pass's bound): what the negative control of case C29 does to show the bound matters.
 */
export function rowStatementTimeoutMs(): number | null {
  return Math.min(ROW_STATEMENT_TIMEOUT_MS, env().DB_STATEMENT_TIMEOUT_MS);
}

/**
 * Runs `work` in one transaction (lib/db `withTransaction`, READ COMMITTED) whose statements may each run at most
 * `statementTimeoutMs` (`SET LOCAL statement_timeout`, which ends with the transaction, also behind a transaction
 * pooler: docs/development.md note 27), retried as a whole after a serialization failure, a deadlock or a lost
 * connection (lib/ledger `withTransactionRetry`, contract section 8). `statementTimeoutMs` null: the session's bound.
 *
 * `work` receives the transaction's connection and must do nothing outside the database (it may run twice). Returns
 * what `work` returns. Throws what it throws after the rollback; a statement past its bound throws SQLSTATE 57014
 * (query_canceled), which is not retried.
 */
export function inRowTransaction<T>(
  statementTimeoutMs: number | null,
  work: (db: Queryable) => Promise<T>,
): Promise<T> {
  return withTransactionRetry(() =>
    withTransaction(async (client) => {
      if (statementTimeoutMs !== null) {
        // An integer from the code, not from input: safe to write into the statement (SET takes no parameters).
        await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(statementTimeoutMs))}`);
      }
      return await work(client);
    }),
  );
}

/**
 * What the pass does after one row's work threw `error`:
 *  - `row`: the error belongs to the row (a constraint, a timeout behind a lock, an unexpected SQLSTATE such as XX001
 *    data_corrupted, a bug): count it on the row and go on with the next one;
 *  - `database_unreachable`: the connection was lost (retries included, lib/ledger/retry.ts) and a fresh one cannot
 *    run `SELECT 1` either: the pass stops and reports what it did.
 * Never throws.
 */
export async function judgeRowError(error: unknown): Promise<"row" | "database_unreachable"> {
  if (classifyDbError(error).kind !== "connection_lost") return "row";
  return (await databaseAnswers()) ? "row" : "database_unreachable";
}

/** True when a connection from the pool runs `SELECT 1`. Never throws. */
async function databaseAnswers(): Promise<boolean> {
  try {
    await pool().query("SELECT 1");
    return true;
  } catch {
    return false;
  }
}
