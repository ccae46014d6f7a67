import { checkHealth } from "@/lib/health/check-health";
import { jsonResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";

export const dynamic = "force-dynamic";

/** GET /api/v1/health (no auth): 200 `{ db, redis }`, 503 when the database is down (contract section 4). */
export const GET = withErrors(async () => {
  const health = await checkHealth();
  return jsonResponse(health.db === "ok" ? 200 : 503, health);
});
