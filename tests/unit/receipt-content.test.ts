/**
 * What a receipt says (docs/decisions/054; contract sections 14 and 15): each kind of succeeded movement the receipt
 * triggers queue gets a title and lines that name what happened and the other party, and a payout's receipt never
 * shows the whole account number. Pure: lib/mail/compose-mail.ts `receiptOf` on an entry's columns.
 */
import { describe, expect, it } from "vitest";
import { type ReceiptEntry, receiptOf } from "../../lib/mail/compose-mail";

function entry(type: ReceiptEntry["type"], params: Record<string, unknown>): ReceiptEntry {
  return {
    id: 42,
    type,
    ref_id: `${type}-ref`,
    amount_minor: 1250,
    currency: "USD",
    params,
    updated_at: new Date("2026-12-02T10:00:00Z"),
  };
}

const line = (receipt: ReturnType<typeof receiptOf>, label: string) =>
  receipt.lines.find((l) => l.label === label)?.value;

describe("receipts for money out and between people", () => {
  it("a payout paid: the amount and the account's last four digits, never the whole number", () => {
    const receipt = receiptOf(entry("payout", { amount: 1250, currency: "USD", destination: "4000000002" }));
    expect(receipt.title).toBe("Withdrawal of $12.50 paid");
    expect(line(receipt, "To")).toBe("the account ending 0002");
    expect(JSON.stringify(receipt)).not.toContain("4000000002");
  });

  it("a transfer sent names the recipient and the note; the one received names the sender", () => {
    const sent = receiptOf(entry("transfer", { to: "bob@example.com", note: "lunch" }));
    expect(sent.title).toBe("You sent $12.50 to bob@example.com");
    expect([line(sent, "What"), line(sent, "To"), line(sent, "Note")]).toEqual([
      "Money sent from your wallet",
      "bob@example.com",
      "lunch",
    ]);
    const received = receiptOf(entry("transfer_in", { from: "alice@example.com", note: "lunch" }));
    expect(received.title).toBe("alice@example.com sent you $12.50");
    expect([line(received, "What"), line(received, "From"), line(received, "Note")]).toEqual([
      "Money received in your wallet",
      "alice@example.com",
      "lunch",
    ]);
  });

  it("both sides of a transfer's reversal say what happened and why", () => {
    const back = receiptOf(entry("transfer_reversal", { reason: "Sent to the wrong person" }));
    expect(back.title).toBe("A transfer you sent was reversed: $12.50 is back in your wallet");
    expect(line(back, "Why")).toBe("Sent to the wrong person");
    const taken = receiptOf(entry("transfer_reversal_out", { reason: "Sent to the wrong person" }));
    expect(taken.title).toBe("A transfer you received was reversed: $12.50 was taken back");
    expect(line(taken, "Why")).toBe("Sent to the wrong person");
  });

  it("the kinds before them keep their words", () => {
    expect(receiptOf(entry("topup", {})).title).toBe("Top-up of $12.50 received");
    expect(receiptOf(entry("payment", { payee: "Cafe" })).title).toBe("Payment of $12.50 to Cafe");
    expect(receiptOf(entry("refund", {})).title).toBe("Refund of $12.50 to your card");
  });
});
