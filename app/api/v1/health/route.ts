import { checkHealth } from "@/lib/health/check-health";
import { jsonResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/health (no auth): 200 `{ db, redis }` (`db` "degraded" while a failover retry is under way), 503 when
 * the database is down (contract section 4). Load balancers check `GET /api/v1/health/live` instead.
 */
const handleGet = withErrors(async () => {
  const health = await checkHealth();
  return jsonResponse(health.db === "down" ? 503 : 200, health);
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
