import { SIGNATURE_HEADER } from "@/lib/bank/signature";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";

export const dynamic = "force-dynamic";

/** The bank's webhook (contract section 5): raw bytes first, signature over them, then the event. */
export const POST = withErrors(async (request) => {
  const rawBody = Buffer.from(await request.arrayBuffer());
  const result = await handleBankWebhook(rawBody, request.headers.get(SIGNATURE_HEADER));
  if (result.kind === "invalid_signature") {
    return problemResponse("invalid_signature", `The Bank-Signature header is ${result.reason}.`);
  }
  return jsonResponse(200, { received: true });
});
