import { USER_ID_PATTERN } from "@/lib/bank/merchant-ref";
import { isValidRefId } from "@/lib/ledger";
import { apiRoute } from "@/lib/http/api-route";
import { operationResponse, problemResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { createRefund } from "@/lib/refunds/create-refund";
import { readRefundInput } from "@/lib/refunds/refund-request";

export const dynamic = "force-dynamic";

type Params = { userId: string; refId: string };

/**
 * POST /api/v1/admin/topups/{userId}/{refId}/refunds `{ refundId, amount }` (contract section 11): admins only. The
 * body is validated before authentication (contract section 9's order of checks: 415, 413, 400, then 401, 403),
 * then the path, then 404 for an unknown top-up and 409 for one that did not succeed; the refund itself answers
 * 201 `{ refund }` (replays byte for byte), 402 `insufficient_funds` and 422 `refund_exceeds_topup` (stored), 422
 * `idempotency_key_reused`, 409 `request_in_progress`.
 */
const handlePost = withInputThenPrincipal<{ refundId: string; amountMinor: number }, Params>(
  readRefundInput,
  async (_request, _principal, input, context) => {
    const { userId, refId } = await context.params;
    if (!USER_ID_PATTERN.test(userId)) return problemResponse("invalid_request", "userId: must be a user id");
    if (!isValidRefId(refId))
      return problemResponse("invalid_request", "refId: must be 1..128 characters of A-Z a-z 0-9 . _ : -");
    const result = await createRefund({ userId, topupRefId: refId, ...input });
    if (result.kind === "topup_not_found")
      return problemResponse("not_found", "No top-up with this refId for this user.");
    if (result.kind === "topup_not_refundable")
      return problemResponse(
        "topup_not_refundable",
        `The top-up is ${result.status}: only a succeeded top-up is refunded.`,
      );
    return operationResponse(result);
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<Params>({ POST: handlePost });
