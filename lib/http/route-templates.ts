/**
 * Every route of `/api/v1`, as a path template. The OpenAPI document (lib/openapi/document.ts) must describe each of
 * them but the {@link UNDOCUMENTED_ROUTE_TEMPLATES}, and nothing else (a type check there; tests/unit/openapi-document.test.ts compares them with the route files),
 * and the metrics label requests with them, so a label never holds a ref id (bounded cardinality).
 */
const API_ROUTE_TEMPLATES = [
  "/api/v1/health",
  "/api/v1/health/live",
  "/api/v1/wallet",
  "/api/v1/topups",
  "/api/v1/topups/{refId}",
  "/api/v1/entries",
  "/api/v1/statement",
  "/api/v1/statement.csv",
  "/api/v1/rewards",
  "/api/v1/payments",
  "/api/v1/payouts",
  "/api/v1/payouts/{refId}",
  "/api/v1/transfers",
  "/api/v1/bank/webhook",
  "/api/v1/admin/topups",
  "/api/v1/admin/topups/{userId}/{refId}/refunds",
  "/api/v1/admin/transfers/{userId}/{refId}/reversal",
  "/api/v1/admin/reconcile",
  "/api/v1/admin/audit",
  "/api/v1/admin/books",
  "/api/v1/admin/books/{account}/postings",
  "/api/v1/bench/noop",
  "/api/v1/openapi.json",
  "/api/v1/metrics",
  "/api/v1/events",
] as const;

export type ApiRouteTemplate = (typeof API_ROUTE_TEMPLATES)[number];

/**
 * Routes the public API description leaves out: the bench's floor, which answers only in an app `npm run bench`
 * started (BENCH_FLOOR_ROUTE, lib/env.ts) and is a 404 everywhere else. Metrics still label it.
 */
export const UNDOCUMENTED_ROUTE_TEMPLATES = ["/api/v1/bench/noop"] as const satisfies readonly ApiRouteTemplate[];

export type DocumentedRouteTemplate = Exclude<ApiRouteTemplate, (typeof UNDOCUMENTED_ROUTE_TEMPLATES)[number]>;

const MATCHERS = API_ROUTE_TEMPLATES.map((template) => ({
  template,
  pattern: new RegExp(`^${template.replaceAll(".", "\\.").replace(/\{[^}]+\}/g, "[^/]+")}$`),
  literal: !template.includes("{"),
}));

/**
 * The template of a request path (`/api/v1/topups/abc` → `/api/v1/topups/{refId}`), a literal template winning over
 * one with a parameter; `unmatched` for any other path (e.g. a 404).
 */
export function routeTemplateOf(pathname: string): ApiRouteTemplate | "unmatched" {
  let found: ApiRouteTemplate | "unmatched" = "unmatched";
  for (const { template, pattern, literal } of MATCHERS) {
    if (!pattern.test(pathname)) continue;
    if (literal) return template;
    found = template;
  }
  return found;
}
