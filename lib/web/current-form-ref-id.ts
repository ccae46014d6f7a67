/**
 * The reference a wallet form shows (case C20, docs/decisions/033-form-references.md): one stored per user and
 * form type, kept until a ledger entry claims it, then replaced by a freshly minted one.
 *
 * Every render and every tab of the user reads the same stored reference, so a resubmit, a double click or the
 * same form submitted from two tabs is one operation, and the ledger's claim absorbs the duplicates (decision 005,
 * contract section 1). Once an entry holds the reference (succeeded, failed or in flight), the next render mints a
 * new one, so the page always offers a form that starts a new operation.
 */
import { retryingPool } from "../db";
import { prepared } from "../ledger";
import { type FormType, mintFormRefId } from "./form-refs";

/**
 * Bounds the read-then-replace loop. A pass ends without an answer only when another render replaced the stored
 * reference between this render's two statements, which needs a claim of the reference in between: three passes
 * are far more than two tabs and a submit can race through.
 */
const PASSES_MAX = 3;

/** The stored reference and whether a ledger entry already holds it (one indexed read of each table). */
const READ_SQL = `
SELECT f.ref_id,
       EXISTS (SELECT 1 FROM ledger_entries l
                WHERE l.user_id = f.user_id AND l.type = f.type AND l.ref_id = f.ref_id) AS claimed
  FROM form_references f
 WHERE f.user_id = $1 AND f.type = $2`;

/**
 * Stores a new reference when there is none, or replaces the stored one only while a ledger entry holds it. The
 * race between two renders is decided here: a second upsert waits on the first one's row lock, then re-checks
 * the condition against the new reference, which no entry holds, so it changes nothing and returns no row; that
 * render then reads the winner's reference. Two tabs can therefore never be handed different unclaimed references.
 */
const REPLACE_SQL = `
INSERT INTO form_references AS f (user_id, type, ref_id) VALUES ($1, $2, $3)
ON CONFLICT (user_id, type) DO UPDATE SET ref_id = EXCLUDED.ref_id, minted_at = now()
 WHERE EXISTS (SELECT 1 FROM ledger_entries l
                WHERE l.user_id = f.user_id AND l.type = f.type AND l.ref_id = f.ref_id)
RETURNING f.ref_id`;

/**
 * The reference the `type` form of `userId` must carry now: `web:<uuid>`, the stored one while no ledger entry
 * holds it, else a newly minted one that replaces it (stored before it is returned, so every tab gets it too).
 *
 * `userId` is the authenticated user's id (never a form field). Returns the ref id (1..128 characters, contract
 * section 1). Throws on a database error, when `userId` has no user row (foreign key), or, which needs claims
 * racing every pass, when {@link PASSES_MAX} passes all lose to concurrent replacements.
 */
export async function currentFormRefId(userId: string, type: FormType): Promise<string> {
  const db = retryingPool();
  for (let pass = 0; pass < PASSES_MAX; pass++) {
    const stored = await db.query<{ ref_id: string; claimed: boolean }>(
      prepared("form_ref_read", READ_SQL, [userId, type]),
    );
    const row = stored.rows[0];
    if (row && !row.claimed) return row.ref_id;
    const minted = mintFormRefId();
    // Safe to run again after a lost connection: if the first run committed, this finds an unclaimed reference,
    // returns no row, and the next pass reads it.
    const replaced = await db.query<{ ref_id: string }>(
      prepared("form_ref_replace", REPLACE_SQL, [userId, type, minted]),
    );
    if (replaced.rows[0]) return replaced.rows[0].ref_id;
  }
  throw new Error(`currentFormRefId: the ${type} form reference of ${userId} kept changing (${PASSES_MAX} passes)`);
}
