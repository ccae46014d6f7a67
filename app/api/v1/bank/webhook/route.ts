import { SIGNATURE_HEADER } from "@/lib/bank/signature";
import { env } from "@/lib/env";
import { readBodyWithin } from "@/lib/http/read-json-body";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { metrics } from "@/lib/metrics/registry";
import { type BankUnavailableAbout, handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * The bank's webhook (contract section 5): at most WEBHOOK_BODY_LIMIT_BYTES of raw bytes are read (413 past it,
 * the rest never read: case C17), then the signature is checked over them, then the event. 200 for every signed
 * event, new, duplicate or unusable; 503 when a failure event could not be confirmed with the bank, or a dispute
 * event's dispute could not be looked up there (nothing changed, the bank redelivers; the detail says which).
 */
/** The 503's detail, by what the bank could not be asked about; each says that nothing changed. */
const UNAVAILABLE_SENTENCES: Record<BankUnavailableAbout, (reason: string) => string> = {
  charge_failure: (reason) =>
    `The failure could not be confirmed with the bank (${reason}); nothing changed. Deliver it again.`,
  refund_failure: (reason) =>
    `The refund's failure could not be confirmed with the bank (${reason}); nothing was given back. Deliver it again.`,
  dispute: (reason) => `The dispute could not be looked up at the bank (${reason}); no money moved. Deliver it again.`,
  payout: (reason) => `The payout could not be looked up at the bank (${reason}); no money moved. Deliver it again.`,
};

const handlePost = withErrors(async (request) => {
  const limitBytes = env().WEBHOOK_BODY_LIMIT_BYTES;
  const body = await readBodyWithin(request, limitBytes);
  if (!body) {
    // `Connection: close`: the server stops reading the socket after this answer instead of draining the rest.
    return problemResponse(
      "payload_too_large",
      `A webhook body is at most ${limitBytes} bytes.`,
      {},
      { connection: "close" },
    );
  }
  const result = await handleBankWebhook(
    Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    request.headers.get(SIGNATURE_HEADER),
  );
  metrics().webhookDeliveries.inc({ outcome: result.kind === "received" ? result.outcome : result.kind });
  if (result.kind === "invalid_signature") {
    return problemResponse("invalid_signature", `The Bank-Signature header is ${result.reason}.`);
  }
  if (result.kind === "bank_unavailable") {
    // Retry-After 5 s: a lookup that failed now has a fair chance in a few seconds; the bank's own back-off may
    // wait longer, which is as good.
    return problemResponse(
      "service_unavailable",
      UNAVAILABLE_SENTENCES[result.about](result.reason),
      {},
      {
        "Retry-After": "5",
      },
    );
  }
  return jsonResponse(200, { received: true });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
