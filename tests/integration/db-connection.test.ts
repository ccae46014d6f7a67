/**
 * lib/db's `withConnection` against the real PostgreSQL: one pooled connection in autocommit, returned to the pool
 * when its work succeeds, destroyed when the work throws (as pg's pool.query does), the error passed on unchanged.
 */
import { describe, expect, it } from "vitest";
import { pool, withConnection } from "../../lib/db";
import { testPool } from "../helpers/db";
import { waitFor } from "../helpers/wait";

async function backendAlive(pid: number): Promise<boolean> {
  const result = await testPool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1",
    [pid],
  );
  return (result.rows[0]?.n ?? 0) > 0;
}

describe("withConnection", () => {
  it("runs its work in autocommit on one connection and returns that connection to the pool", async () => {
    const seen = await withConnection(async (client) => {
      const state = await client.query<{ pid: number; in_transaction: boolean }>(
        "SELECT pg_backend_pid() AS pid, now() <> statement_timestamp() AS in_transaction",
      );
      return state.rows[0]!;
    });
    // now() differs from statement_timestamp() only inside an explicit transaction started earlier.
    expect(seen.in_transaction).toBe(false);
    expect(await backendAlive(seen.pid)).toBe(true);
    expect(pool().idleCount).toBeGreaterThanOrEqual(1);
  });

  it("destroys the connection when the work throws, and passes the error on unchanged", async () => {
    let pid = 0;
    const thrown = new Error("work failed");
    await expect(
      withConnection(async (client) => {
        pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    expect(pid).toBeGreaterThan(0);
    await waitFor(
      () => backendAlive(pid),
      (alive) => !alive,
      { what: `backend ${pid} gone`, timeoutMs: 10_000, intervalMs: 20 },
    );
  });
});
