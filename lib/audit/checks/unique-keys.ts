/**
 * Contract section 7.2, first half: no `(user_id, type, ref_id)` twice. The claim index makes a duplicate
 * impossible while it exists and is valid, so the check verifies both: the index is there, unique and valid, and
 * the table holds no duplicate (which would mean the index was dropped or rebuilt around bad data).
 */
import { pool } from "../../db";
import { CLAIM_INDEX } from "../../ledger";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const UNIQUE_KEYS_CHECK_NAME = "no_duplicate_keys";

const INDEX_SQL = `
SELECT i.indisunique AS is_unique, i.indisvalid AS is_valid, pg_get_indexdef(i.indexrelid) AS definition
  FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relname = $1 AND i.indrelid = 'ledger_entries'::regclass`;

// $1 user ids or null, $2 limit.
const DUPLICATES_SQL = `
SELECT user_id, type, ref_id, count(*)::int AS n, count(*) OVER ()::int AS total
  FROM ledger_entries
 WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
 GROUP BY user_id, type, ref_id
HAVING count(*) > 1
 ORDER BY user_id, type, ref_id
 LIMIT $2`;

/** The key-uniqueness check (7.2) over `scope`. Throws when the database cannot be queried. */
export function createUniqueKeysCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: UNIQUE_KEYS_CHECK_NAME,
    async run() {
      const violations: string[] = [];
      const index = await pool().query<{ is_unique: boolean; is_valid: boolean; definition: string }>(INDEX_SQL, [
        CLAIM_INDEX,
      ]);
      const row = index.rows[0];
      if (!row) {
        violations.push(`the claim index ${CLAIM_INDEX} does not exist on ledger_entries`);
      } else {
        if (!row.is_unique) violations.push(`the claim index ${CLAIM_INDEX} is not unique`);
        if (!row.is_valid) violations.push(`the claim index ${CLAIM_INDEX} is not valid (a failed concurrent build?)`);
        if (!row.definition.includes("(user_id, type, ref_id)")) {
          violations.push(`the claim index ${CLAIM_INDEX} is not on (user_id, type, ref_id): ${row.definition}`);
        }
      }
      const duplicates = await pool().query<{
        user_id: string;
        type: string;
        ref_id: string;
        n: number;
        total: number;
      }>(DUPLICATES_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
      for (const dup of duplicates.rows)
        violations.push(`operation (${dup.user_id}, ${dup.type}, ${dup.ref_id}) has ${dup.n} rows`);
      const total = violations.length - duplicates.rows.length + (duplicates.rows[0]?.total ?? 0);
      return checkResult(UNIQUE_KEYS_CHECK_NAME, violations, total);
    },
  };
}
