import { parseQuery, statementCsvQuerySchema } from "@/lib/http/list-query";
import { problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { streamStatementCsv } from "@/lib/wallet/stream-statement-csv";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/statement.csv?from=&to=: the caller's statement as a CSV download, streamed (contract 13.4). */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(statementCsvQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const csv = await streamStatementCsv(principal.userId, query.value);
  return new Response(csv.body, {
    status: 200,
    headers: {
      "content-type": "text/csv; charset=utf-8; header=present",
      "content-disposition": `attachment; filename="${csv.filename}"`,
      "cache-control": "no-store",
    },
  });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
