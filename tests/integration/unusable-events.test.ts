/**
 * Signed bank events that cannot be applied are recorded with a reason in the terms of what they say they are
 * (contract section 5, "Unusable events"): a malformed `refund.*` event is judged as a refund event and a malformed
 * `charge.dispute*` event as a dispute event, never described by the charge events' rules (which reported a refund's
 * missing `refundId` as a wrong `type`). The real handler (lib/webhooks/handle-bank-webhook.ts), signed bytes in,
 * rows read back from PostgreSQL; the reason is decided by `unusableReason` in lib/webhooks/parse-bank-event.ts.
 *
 * Negative control, by hand: judge every body by the charge events' schema there (`const kind = EVENT_KINDS[2]`
 * instead of the kind its type names); the refund and dispute assertions then fail with details such as
 * `an event of a type the wallet does not handle: "refund.succeeded"`.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signWebhook } from "@/lib/bank/signature";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";

/** Delivers `event` signed with the stack's secret; returns the detail recorded for its bytes. */
async function recordedDetail(event: unknown): Promise<string> {
  const body = JSON.stringify(event);
  const secrets = testStack().webhookSecrets.split(",");
  const result = await handleBankWebhook(Buffer.from(body), signWebhook(body, secrets, Math.floor(Date.now() / 1000)));
  expect(result).toEqual({ kind: "received", outcome: "unusable_event" });
  const rows = await testPool().query<{ detail: string; outcome: string; type: string }>(
    "SELECT detail, outcome, type FROM bank_webhook_events WHERE payload = $1",
    [body],
  );
  expect(rows.rows).toHaveLength(1);
  expect(rows.rows[0]).toMatchObject({ outcome: "unusable_event", type: "unusable" });
  return rows.rows[0]!.detail;
}

const refundData = (tag: string) => ({
  refundId: `rf_${tag}`,
  chargeId: `ch_${tag}`,
  merchantRef: `topup:u1:${tag}`,
  amount: 100,
  currency: "USD",
});
const disputeData = (tag: string) => ({
  chargeId: `ch_${tag}`,
  merchantRef: `topup:u1:${tag}`,
  amount: 100,
  currency: "USD",
  disputeId: `dp_${tag}`,
});

describe("unusable events name what they are and what was wrong", () => {
  it("a refund event without its refundId, or with a charge id of the wrong type, is recorded as a refund event", async () => {
    const tag = freshRefId("uu-refund");
    const { refundId: _dropped, ...noRefundId } = refundData(tag);
    expect(await recordedDetail({ id: `evt_${tag}_1`, type: "refund.succeeded", data: noRefundId })).toBe(
      'refund event "refund.succeeded": data.refundId: Invalid input: expected string, received undefined',
    );
    const wrongType = { ...refundData(tag), chargeId: 42 };
    expect(await recordedDetail({ id: `evt_${tag}_2`, type: "refund.failed", data: wrongType })).toBe(
      'refund event "refund.failed": data.chargeId: Invalid input: expected string, received number',
    );
  });

  it("a dispute event with a dispute id that is no ref id is recorded as a dispute event", async () => {
    const tag = freshRefId("uu-dispute");
    const data = { ...disputeData(tag), disputeId: "dp x" };
    expect(await recordedDetail({ id: `evt_${tag}_1`, type: "charge.dispute_closed", data })).toBe(
      'dispute event "charge.dispute_closed": data.disputeId: a dispute id usable as a ref id',
    );
    const { disputeId: _dropped, ...noDisputeId } = disputeData(tag);
    expect(await recordedDetail({ id: `evt_${tag}_2`, type: "charge.disputed", data: noDisputeId })).toBe(
      'dispute event "charge.disputed": data.disputeId: Invalid input: expected string, received undefined',
    );
  });

  it("a charge event keeps its own reason; a type nobody handles and a body without one say so", async () => {
    const tag = freshRefId("uu-charge");
    const charge = { chargeId: `ch_${tag}`, merchantRef: `topup:u1:${tag}`, amount: "100", currency: "USD" };
    expect(await recordedDetail({ id: `evt_${tag}_1`, type: "charge.succeeded", data: charge })).toBe(
      'charge event "charge.succeeded": data.amount: Invalid input: expected number, received string',
    );
    expect(await recordedDetail({ id: `evt_${tag}_2`, type: "refund.reversed", data: refundData(tag) })).toBe(
      'an event of a type the wallet does not handle: "refund.reversed"',
    );
    expect(await recordedDetail({ id: `evt_${tag}_3`, type: "payout.sent", data: {} })).toBe(
      'an event of a type the wallet does not handle: "payout.sent"',
    );
    expect(await recordedDetail({ id: `evt_${tag}_4`, data: charge })).toBe(
      "the event has no type (a string such as charge.succeeded)",
    );
  });

  it("an event of any kind whose bytes are not UTF-8 is unusable, a refund event too: every kind is decoded strictly", async () => {
    const tag = freshRefId("uu-bytes");
    const event = JSON.stringify({ id: `evt_${tag}`, type: "refund.succeeded", data: refundData(tag), note: "#" });
    // One byte that is no UTF-8 in a field no schema reads: a lenient decoding would read a well-formed refund event.
    const body = Buffer.from(event.replace('"#"', '"\xff"'), "latin1");
    const secrets = testStack().webhookSecrets.split(",");
    const signature = signWebhook(body, secrets, Math.floor(Date.now() / 1000));
    expect(await handleBankWebhook(body, signature)).toEqual({ kind: "received", outcome: "unusable_event" });
    const rows = await testPool().query<{ detail: string; outcome: string }>(
      "SELECT detail, outcome FROM bank_webhook_events WHERE event_id = $1",
      [`unusable:${createHash("sha256").update(body).digest("hex")}`],
    );
    expect(rows.rows).toEqual([{ detail: "the body is not valid UTF-8 text", outcome: "unusable_event" }]);
  });
});
