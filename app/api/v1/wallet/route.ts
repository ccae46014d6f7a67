import { jsonResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { getWallet } from "@/lib/wallet/get-wallet";

export const dynamic = "force-dynamic";

/** GET /api/v1/wallet: `{ balance, currency }` (contract section 4). */
export const GET = withPrincipal(async (_request, principal) => jsonResponse(200, await getWallet(principal.userId)));
