import { listAdminTopups } from "@/lib/admin/list-admin-topups";
import { parseListQuery } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";

export const dynamic = "force-dynamic";

/** GET /api/v1/admin/topups?status=&stuck=1: admins only (contract section 4). */
export const GET = withPrincipal(
  async (request) => {
    const query = parseListQuery(new URL(request.url).searchParams);
    if (!query.ok) return problemResponse("invalid_request", query.detail);
    return jsonResponse(200, { topups: await listAdminTopups(query.value) });
  },
  { admin: true },
);
