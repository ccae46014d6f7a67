import { timingSafeEqual } from "node:crypto";
import { env } from "@/lib/env";
import { withErrors, withPrincipal } from "@/lib/http/route";
import { metricsText } from "@/lib/metrics/scrape";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** True when `authorization` is `Bearer <METRICS_TOKEN>` (constant-time; false when no METRICS_TOKEN is set). */
function isMetricsToken(authorization: string | null): boolean {
  const expected = env().METRICS_TOKEN;
  if (!expected || authorization === null) return false;
  const sent = Buffer.from(authorization);
  const wanted = Buffer.from(`Bearer ${expected}`);
  return sent.length === wanted.length && timingSafeEqual(sent, wanted);
}

async function scrape(): Promise<Response> {
  const { contentType, text } = await metricsText();
  return new Response(text, { status: 200, headers: { "content-type": contentType, "cache-control": "no-store" } });
}

const forAdmins = withPrincipal(async () => await scrape(), { admin: true });

/**
 * GET /api/v1/metrics: this process's metrics in the Prometheus text format, for a scraper holding
 * `Authorization: Bearer <METRICS_TOKEN>` or for an admin (session or API token); 401/403 otherwise.
 */
const handleGet = withErrors(async (request, context) =>
  isMetricsToken(request.headers.get("authorization")) ? await scrape() : await forAdmins(request, context),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
