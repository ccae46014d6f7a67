import { readTrialBalance } from "@/lib/admin/read-trial-balance";
import { apiRoute } from "@/lib/http/api-route";
import { jsonResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/admin/books: admins only (403 otherwise); the trial balance and the last 14 UTC days of change
 * (contract section 13.5). Books that do not balance are a 200 with `balanced: false`.
 */
const handleGet = withPrincipal(async () => jsonResponse(200, await readTrialBalance()), { admin: true });

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
