/**
 * Sending money to another user from the wallet page (contract section 15), at a 1280 px desktop and a 390 px phone,
 * by keyboard alone: two people sign up, the sender is funded by a top-up the bank answers, types the recipient's
 * address, a note and an amount into the Send money form and presses Enter. The sender reads a sentence naming the
 * recipient and the amount and sees the balance lowered; the recipient's wallet page, open in another browser the
 * whole time, shows the money arrive without a reload (the `transfer_in` row's notice on the live stream), and their
 * statement names the sender. The page with the form and its answer is axe-clean.
 *
 * Only these two users' own balances and lines are asserted: the e2e database is shared with suites that corrupt
 * other users' rows on purpose.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { apiTopup, axeViolations, signUp, tabTo, walletState } from "./helpers";

const VIEWPORTS = [
  { label: "desktop", width: 1280, height: 800 },
  { label: "phone", width: 390, height: 844 },
] as const;

for (const viewport of VIEWPORTS) {
  test(`${viewport.label}: send money by keyboard; the recipient's open page shows it live, their statement names the sender`, async ({
    browser,
  }) => {
    // Two sign-ups (argon2id), a top-up answered by the bank, a transfer, a statement and an axe run.
    test.setTimeout(120_000);
    const senderContext = await browser.newContext({ viewport });
    const recipientContext = await browser.newContext({ viewport });
    try {
      const recipientPage = await recipientContext.newPage();
      const recipientEmail = await signUp(recipientPage);
      // The recipient's wallet stays open from here on, listening on the live stream.
      await expect(recipientPage.getByTestId("live")).toHaveAttribute("data-live", "push", { timeout: 15_000 });
      await expect(recipientPage.getByTestId("balance")).toHaveText("$0.00");

      const page = await senderContext.newPage();
      const senderEmail = await signUp(page);
      expect(await apiTopup(page, `fund-${randomUUID().slice(0, 8)}`, 2500)).toBe(201);
      await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(2500);
      await page.goto("/wallet");
      await expect(page.getByTestId("balance")).toHaveText("$25.00");

      // Keyboard only: Tab to each field, type, and Enter submits the form.
      const form = page.getByTestId("send-form");
      await tabTo(page, form.getByRole("textbox", { name: "Send to (their email address)" }));
      await page.keyboard.type(recipientEmail);
      await page.keyboard.press("Tab");
      await expect(form.getByRole("textbox", { name: "Note (optional)" })).toBeFocused();
      await page.keyboard.type("Dinner on Friday");
      await tabTo(page, form.getByRole("textbox", { name: "Other amount" }));
      await page.keyboard.type("7.50");
      await page.keyboard.press("Enter");

      const result = form.getByTestId("result");
      await expect(result).toHaveText(`Sent $7.50 to ${recipientEmail}. It is in their wallet now.`, {
        timeout: 15_000,
      });
      await expect(result).toHaveAttribute("role", "status");
      await expect(page.getByTestId("balance")).toHaveText("$17.50");
      const sentLine = page.getByTestId("history").locator('li[data-type="transfer"]');
      await expect(sentLine).toHaveCount(1);
      await expect(sentLine).toContainText(`Sent to ${recipientEmail}`);
      expect((await walletState(page)).balance).toBe(1750);

      // The form and its answer are axe-clean, and nothing is wider than the screen.
      expect(await axeViolations(page)).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);

      // The recipient's page, never reloaded, shows the money and who sent it.
      await expect(recipientPage.getByTestId("balance")).toHaveText("$7.50", { timeout: 15_000 });
      const receivedLine = recipientPage.getByTestId("history").locator('li[data-type="transfer_in"]');
      await expect(receivedLine).toHaveCount(1);
      await expect(receivedLine).toContainText(`Received from ${senderEmail}`);
      await expect(receivedLine).toContainText("Dinner on Friday");

      // Their statement names the sender as the counter-party, with the note.
      await recipientPage.goto("/wallet/statement");
      const rows = recipientPage.getByTestId("statement").locator("tbody tr");
      await expect(rows).toHaveCount(1);
      await expect(rows.first()).toHaveAttribute("data-kind", "transfer_in");
      await expect(rows.first()).toContainText(senderEmail);
      await expect(rows.first()).toContainText("Dinner on Friday");
      await expect(rows.first()).toContainText("+$7.50");
      expect(await axeViolations(recipientPage)).toEqual([]);
    } finally {
      await senderContext.close();
      await recipientContext.close();
    }
  });
}
