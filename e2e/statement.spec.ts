/**
 * The statement page and its CSV download (contract section 13.4; docs/decisions/059), at a 1280 px desktop and a
 * 390 px phone, by keyboard alone: from the wallet's history to the statement, the opening balance and the running
 * balance after each movement, the CSV of the same days downloaded and read back (a payee that looks like a formula
 * neutralised), nothing wider than the screen, axe-clean.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parse } from "csv-parse/sync";
import { expect, test } from "@playwright/test";
import { apiTopup, axeViolations, signUp, tabTo, walletState } from "./helpers";

const VIEWPORTS = [
  { label: "desktop", width: 1280, height: 800 },
  { label: "phone", width: 390, height: 844 },
] as const;

/** A payee a spreadsheet would run as a formula, with a comma (the API takes it as readable text). */
const FORMULA_PAYEE = "=SUM(1+1), Ltd";

for (const viewport of VIEWPORTS) {
  test(`${viewport.label}: the statement by keyboard, its running balance, and its CSV download`, async ({
    browser,
  }) => {
    // A sign-up, a top-up answered by the bank, a payment, a download and an axe run: 90 s on a loaded machine.
    test.setTimeout(120_000);
    const context = await browser.newContext({ viewport, acceptDownloads: true });
    const page = await context.newPage();
    try {
      await signUp(page);
      expect(await apiTopup(page, `statement-${randomUUID().slice(0, 8)}`, 2500)).toBe(201);
      await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(2500);
      const paid = await page.request.post("/api/v1/payments", {
        data: { orderId: `order-${randomUUID()}`, amount: 500, payee: FORMULA_PAYEE },
        headers: { origin: new URL(page.url()).origin },
      });
      expect(paid.status()).toBe(201);

      await page.goto("/wallet");
      const link = page.getByTestId("statement-link");
      await tabTo(page, link);
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/\/wallet\/statement$/);
      await expect(page.getByRole("heading", { level: 1 })).toHaveText("Statement");
      await expect(page.getByTestId("opening-balance")).toContainText("$0.00");
      const rows = page.getByTestId("statement").locator("tbody tr");
      await expect(rows).toHaveCount(2);
      await expect(page.getByTestId("running-balance")).toHaveText(["$25.00", "$20.00"]);
      await expect(rows.nth(1)).toContainText(FORMULA_PAYEE);
      await expect(rows.nth(1)).toContainText("-$5.00");

      // Nothing wider than the screen.
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width).toBeLessThanOrEqual(viewport.width);
      expect(await axeViolations(page)).toEqual([]);

      // The download, by keyboard: the file of the same days, read back by a CSV parser.
      await tabTo(page, page.getByTestId("statement-csv"));
      const [download] = await Promise.all([page.waitForEvent("download"), page.keyboard.press("Enter")]);
      expect(download.suggestedFilename()).toMatch(/^statement-\d{4}-\d\d-\d\d-to-\d{4}-\d\d-\d\d\.csv$/);
      const text = await readFile(await download.path(), "utf8");
      const records = parse(text, { bom: true }) as string[][];
      expect(records.map((r) => [r[3], r[6], r[7]])).toEqual([
        ["Counterparty", "Amount", "Balance after"],
        ["Bank", "25.00", "25.00"],
        [`'${FORMULA_PAYEE}`, "-5.00", "20.00"],
      ]);

      // A range the API refuses is said in words, with the way back.
      await page.goto("/wallet/statement?from=2026-12-10&to=2026-12-01");
      await expect(page.getByTestId("statement-invalid")).toBeVisible();
    } finally {
      await context.close();
    }
  });
}
