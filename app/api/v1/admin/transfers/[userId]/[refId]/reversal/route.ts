import { USER_ID_PATTERN } from "@/lib/bank/merchant-ref";
import { isValidRefId } from "@/lib/ledger";
import { apiRoute } from "@/lib/http/api-route";
import { operationResponse, problemResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { readReversalInput } from "@/lib/transfers/reversal-request";
import { reverseTransfer } from "@/lib/transfers/reverse-transfer";

export const dynamic = "force-dynamic";

type Params = { userId: string; refId: string };

/**
 * POST /api/v1/admin/transfers/{userId}/{refId}/reversal `{ reason }` (contract section 15; docs/decisions/063):
 * admins only. The body is validated before authentication (contract section 9's order of checks: 415, 413, 400,
 * then 401, 403), then the path, then 404 for a sender without this transfer and 409 `transfer_not_reversible` for a
 * transfer that did not succeed; the reversal itself answers 201 `{ reversal }` (replays byte for byte, with
 * Idempotent-Replayed), 422 `idempotency_key_reused` (the same transfer with another reason), 409
 * `request_in_progress`.
 */
const handlePost = withInputThenPrincipal<{ reason: string }, Params>(
  readReversalInput,
  async (_request, principal, input, context) => {
    const { userId, refId } = await context.params;
    if (!USER_ID_PATTERN.test(userId)) return problemResponse("invalid_request", "userId: must be a user id");
    if (!isValidRefId(refId))
      return problemResponse("invalid_request", "refId: must be 1..128 characters of A-Z a-z 0-9 . _ : -");
    const result = await reverseTransfer({ userId, refId, reason: input.reason, adminId: principal.userId });
    if (result.kind === "transfer_not_found")
      return problemResponse("not_found", "No transfer with this refId was sent by this user.");
    if (result.kind === "transfer_not_reversible")
      return problemResponse(
        "transfer_not_reversible",
        `The transfer is ${result.status}: only a succeeded transfer is reversed.`,
      );
    return operationResponse(result);
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<Params>({ POST: handlePost });
