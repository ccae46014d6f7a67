/**
 * Withdrawals on the wallet page (contract section 14), at a desktop and a phone width: a funded wallet withdraws to
 * a bank account with the keyboard only, the answer says "processing" while the bank has not answered, then turns
 * "paid" without a reload once the bank's webhook lands, the balance lowered; a withdrawal larger than the balance is
 * refused in plain words. Only this test's own user is asserted on (the e2e database is shared).
 *
 * The sandbox bank settles a payout `BANK_WEBHOOK_DELAY_MS` (200 ms) after it is made: to see the processing state
 * for sure, the bank's webhook delivery is paused around the withdrawal and resumed once "processing" has shown
 * (charges and payouts keep settling at the bank meanwhile; only their announcements wait, for a second or two).
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { apiTopup, axeViolations, jargonOn, signUp, stackInfo, tabTo, walletState } from "./helpers";

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
] as const;

/** A sandbox bank account number (10 digits, Luhn). */
const ACCOUNT = "4000000002";

for (const viewport of VIEWPORTS) {
  test.describe(`at ${viewport.width} px`, () => {
    test.use({ viewport });

    test("withdraw with the keyboard: processing, then paid live, the balance lowered; too much is refused", async ({
      page,
    }, testInfo) => {
      test.setTimeout(90_000);
      await signUp(page);
      // Fund the wallet as the other specs do: a top-up the bank's webhook settles.
      expect(await apiTopup(page, `e2e-fund-${randomUUID().slice(0, 8)}`, 5000)).toBe(201);
      await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(5000);
      await page.goto("/wallet");
      await expect(page.getByTestId("balance")).toHaveText("$50.00");
      const live = page.getByTestId("live");
      await expect(live).toHaveAttribute("data-live", "push", { timeout: 15_000 });
      await expect(live).toHaveAttribute("data-refreshing", "false");
      await page.evaluate(() => {
        (window as unknown as { payoutMark: string }).payoutMark = "same document";
      });

      const section = page.getByTestId("payouts");
      const form = page.getByTestId("payout-form");
      await expect(section.getByTestId("held")).toHaveText("No money held for withdrawals.");
      const amount = form.getByLabel("Amount");
      const account = form.getByLabel("Account number");
      await expect(account).toHaveAttribute("inputmode", "numeric");
      await expect(account).toHaveAttribute("autocomplete", "off");
      await expect(form).toContainText("10 digits, such as 4000000002");

      const { bankUrl } = stackInfo();
      expect((await page.request.post(`${bankUrl}/_sandbox/webhooks/pause`)).status()).toBe(200);
      try {
        // Keyboard only: Tab to the amount, type, Tab to the account number, type, Enter.
        await tabTo(page, amount);
        await page.keyboard.type("12.00");
        await tabTo(page, account);
        await page.keyboard.type(ACCOUNT);
        await page.keyboard.press("Enter");
        const result = form.getByTestId("result");
        await expect(result).toHaveAttribute("data-status", "processing", { timeout: 15_000 });
        await expect(result).toContainText("Withdrawal of $12.00 to the account ending 0002: processing");
        await expect(section.getByTestId("held")).toContainText("$12.00 held for withdrawals");
        await expect(page.getByTestId("balance")).toHaveText("$38.00");
        await expect(section.getByTestId("payout-list").locator("li").first()).toContainText("Processing");
        await page.screenshot({ path: testInfo.outputPath(`payout-processing-${viewport.width}.png`), fullPage: true });
      } finally {
        await page.request.post(`${bankUrl}/_sandbox/webhooks/resume`);
      }

      // The bank's word arrives: the answer, the list and the held amount follow without a reload.
      const result = form.getByTestId("result");
      await expect(result).toHaveAttribute("data-status", "succeeded", { timeout: 20_000 });
      await expect(result).toHaveText("Paid: $12.00 was sent to the account ending 0002.");
      await expect(section.getByTestId("payout-list").locator("li").first()).toHaveAttribute(
        "data-status",
        "succeeded",
      );
      await expect(section.getByTestId("payout-list").locator("li").first()).toContainText("Paid");
      await expect(section.getByTestId("held")).toHaveText("No money held for withdrawals.");
      await expect(page.getByTestId("balance")).toHaveText("$38.00");
      expect(
        await page.evaluate(() => (window as unknown as { payoutMark?: string }).payoutMark === "same document"),
        "the page was reloaded",
      ).toBe(true);
      expect((await walletState(page)).balance).toBe(3800);

      // More than the balance: refused, and the sentence says nothing was withdrawn.
      await tabTo(page, amount);
      await page.keyboard.press("ControlOrMeta+A");
      await page.keyboard.type("100.00");
      await page.keyboard.press("Enter");
      await expect(result).toHaveText(
        "Not enough money in your wallet for this withdrawal of $100.00. Nothing was withdrawn.",
      );
      await expect(result).toHaveAttribute("role", "alert");
      await expect(page.getByTestId("balance")).toHaveText("$38.00");
      await expect(section.getByTestId("held")).toHaveText("No money held for withdrawals.");
      await page.screenshot({ path: testInfo.outputPath(`payout-refused-${viewport.width}.png`), fullPage: true });

      expect(await jargonOn(page)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
    });
  });
}
