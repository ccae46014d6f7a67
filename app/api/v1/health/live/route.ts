import { jsonResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/health/live (no auth): 200 `{ live: true }` while this process serves HTTP. Touches neither
 * PostgreSQL nor Redis, so a database failover does not take every instance out of the load balancer at once
 * (HAProxy's `option httpchk` points here). `GET /api/v1/health` stays the readiness report.
 */
const handleGet = withErrors(async () => jsonResponse(200, { live: true }));

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
