import { listAdminTopups } from "@/lib/admin/list-admin-topups";
import { adminTopupsQuerySchema, parseQuery } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/admin/topups?status=&stuck=1&user=&limit=&cursor=: admins only, one page (contract section 4). */
const handleGet = withPrincipal(
  async (request) => {
    const query = parseQuery(adminTopupsQuerySchema, new URL(request.url).searchParams);
    if (!query.ok) return problemResponse("invalid_request", query.detail);
    const { user, ...filters } = query.value;
    const page = await listAdminTopups({ ...filters, userEmail: user });
    if (!page.ok) return problemResponse("invalid_request", page.detail);
    return jsonResponse(200, { topups: page.items, nextCursor: page.nextCursor });
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
