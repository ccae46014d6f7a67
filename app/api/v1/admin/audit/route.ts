import { jsonResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { runAudit } from "@/lib/audit/run-audit";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/admin/audit: admins only (403 otherwise); runs every invariant check of contract section 7 and
 * answers 200 `{ ok, checks: [{ name, ok, violations }] }`. A violated invariant is a 200 with `ok: false` (the
 * audit ran); an audit that cannot run (database down) is a 500.
 */
const handleGet = withPrincipal(
  async () => {
    return jsonResponse(200, await runAudit());
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
