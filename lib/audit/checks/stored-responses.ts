/**
 * Contract section 7.4: every stored response replays byte-identically. The replay path sends the stored status
 * and bytes unchanged (proven by the HTTP tests); what can go wrong at rest is a stored response that could not
 * be sent as it is: a body that is not JSON, a status outside 100..599, an error body whose problem `status`
 * disagrees with the stored status code, or bytes that the app would not have written (altered at rest).
 */
import { pool } from "../../db";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const STORED_RESPONSES_CHECK_NAME = "stored_responses_replayable";

/**
 * Rows read per query. 1000 bodies of at most a few hundred bytes each keep one page well under a megabyte; the
 * check walks every stored response once, page by page (keyset pagination), so memory does not grow with the
 * ledger.
 */
const PAGE_ROWS = 1000;

// Keyset pagination on the primary key (user_id, id). $1 user ids or null, $2/$3 the last key seen, $4 page size.
const PAGE_SQL = `
SELECT user_id, id, type, ref_id, response_status, response_body
  FROM ledger_entries
 WHERE response_status IS NOT NULL
   AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   AND (user_id, id) > ($2::text, $3::bigint)
 ORDER BY user_id, id
 LIMIT $4`;

interface ResponseRow {
  user_id: string;
  id: number;
  type: string;
  ref_id: string;
  response_status: number;
  response_body: string;
}

/**
 * Why a stored response could not be replayed as it is, or null when it can. Said in words an operator reads on the
 * admin page (no format names).
 */
function problemWith(row: ResponseRow): string | null {
  if (!Number.isInteger(row.response_status) || row.response_status < 100 || row.response_status > 599) {
    return `status ${row.response_status} is not an HTTP status`;
  }
  let body: unknown;
  try {
    body = JSON.parse(row.response_body);
  } catch {
    return "the stored body cannot be read back";
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return "the stored body is not a document the app writes";
  // Every first response is written by JSON.stringify (lib/ledger/views.ts), so its bytes are exactly the
  // re-serialisation of its parsed value: any other byte (a space, a reordered key) was not written by us.
  if (JSON.stringify(body) !== row.response_body)
    return "the stored body's bytes differ from what the app writes (altered at rest)";
  if (row.response_status >= 400 && (body as { status?: unknown }).status !== row.response_status) {
    return `problem body says status ${String((body as { status?: unknown }).status)} but ${row.response_status} is stored`;
  }
  return null;
}

/** The stored-response check (7.4) over `scope`. Throws when the database cannot be queried. */
export function createStoredResponsesCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: STORED_RESPONSES_CHECK_NAME,
    async run() {
      const violations: string[] = [];
      let total = 0;
      let after: [string, number] = ["", 0];
      for (;;) {
        const page = await pool().query<ResponseRow>(PAGE_SQL, [scope.userIds, after[0], after[1], PAGE_ROWS]);
        for (const row of page.rows) {
          const problem = problemWith(row);
          if (problem === null) continue;
          total += 1;
          if (violations.length < AUDIT_VIOLATIONS_MAX)
            violations.push(`${row.type} ${row.ref_id} of user ${row.user_id}: ${problem}`);
        }
        const last = page.rows.at(-1);
        if (!last || page.rows.length < PAGE_ROWS) break;
        after = [last.user_id, last.id];
      }
      return checkResult(STORED_RESPONSES_CHECK_NAME, violations, total);
    },
  };
}
