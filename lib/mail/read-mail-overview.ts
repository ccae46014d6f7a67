/**
 * What the admin page shows of the outbox (docs/decisions/054-mail-outbox.md): how many messages are in each state,
 * and the newest ones that will not go out by themselves: `unknown` (the sender lost its word on them; never resent)
 * and `failed` (refused for good, or given up). Messages are never shown, only their kind, recipient and error.
 */
import { pool } from "../db";
import type { MailDb } from "./mail-db";
import type { MailKind } from "./outbox";

/** One message that needs a person's eye. */
export interface MailNeedingAttention {
  readonly id: number;
  readonly kind: MailKind;
  readonly status: "unknown" | "failed";
  /** The recipient's current address. */
  readonly email: string;
  readonly attempts: number;
  readonly lastError: string | null;
  /** ISO 8601: when it was queued. */
  readonly createdAt: string;
}

/**
 * The outbox at a glance: how many messages wait, are being sent, failed or have an unknown outcome (sent ones are
 * not counted: that would read every receipt ever sent), and the newest messages needing attention.
 */
export interface MailOverview {
  readonly counts: Readonly<Record<"pending" | "sending" | "failed" | "unknown", number>>;
  readonly attention: readonly MailNeedingAttention[];
}

/**
 * Reads the overview.
 * @param limit the most messages needing attention returned, newest first (1..100).
 * @param db where to read: the process's pool by default (a test passes its scratch database's).
 * @throws database errors.
 */
export async function readMailOverview(limit: number, db: MailDb = pool()): Promise<MailOverview> {
  const [counted, listed] = await Promise.all([
    db.query<{ status: keyof MailOverview["counts"]; n: number }>(
      // Each state through its partial index (prisma/migrations/*_mail_outbox, *_mail_attention_index).
      `SELECT status, count(*)::int AS n FROM mail_outbox
        WHERE status IN ('pending', 'sending', 'failed', 'unknown') GROUP BY status`,
    ),
    db.query<{
      id: number;
      kind: MailKind;
      status: "unknown" | "failed";
      email: string;
      attempts: number;
      last_error: string | null;
      created_at: Date;
    }>(
      `SELECT m.id, m.kind, m.status, u.email, m.attempts, m.last_error, m.created_at
         FROM mail_outbox m JOIN "user" u ON u.id = m.user_id
        WHERE m.status IN ('unknown', 'failed')
        ORDER BY m.id DESC LIMIT $1`,
      [limit],
    ),
  ]);
  const counts = { pending: 0, sending: 0, failed: 0, unknown: 0 };
  for (const row of counted.rows) counts[row.status] = row.n;
  return {
    counts,
    attention: listed.rows.map((row) => ({
      id: row.id,
      kind: row.kind,
      status: row.status,
      email: row.email,
      attempts: row.attempts,
      lastError: row.last_error,
      createdAt: row.created_at.toISOString(),
    })),
  };
}
