import { jsonResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { openApiDocument } from "@/lib/openapi/document";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/openapi.json (no auth): the OpenAPI 3.1 description of this API. */
const handleGet = withErrors(async () => jsonResponse(200, openApiDocument()));

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
