/**
 * What lib/mail runs its statements on: the process's pool (lib/db.ts `pool()`), a transaction's client, or a test's
 * own pool on a scratch database.
 */
import type { Pool } from "pg";

export type MailDb = Pick<Pool, "query">;
