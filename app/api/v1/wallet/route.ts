import { jsonResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { getWallet } from "@/lib/wallet/get-wallet";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/wallet: `{ balance, currency }` (contract section 4). */
const handleGet = withPrincipal(async (_request, principal) => jsonResponse(200, await getWallet(principal.userId)));

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
