/**
 * The Books pages as an operator uses them (contract section 13.5), at a 1280 px desktop and a 390 px phone, with the
 * keyboard alone: from the admin page's own navigation to the trial balance (which balances: every movement here went
 * through the app), into the bank clearing account's postings, and from a top-up's posting to its admin timeline.
 * Every time on them is UTC and says so, axe-core finds no serious or critical violation, and an account that is not a
 * house account is the 404 page. (Both pages also pass e2e/layout.spec.ts and e2e/accessibility.spec.ts through
 * e2e/pages.ts.)
 */
import { expect, type Page, test } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiTopup, axeViolations, makeAdmin, signUp, tabTo } from "./helpers";

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
] as const;

/** Nothing on the page is wider than the viewport (the tables scroll inside their own box, or become cards). */
async function pageWidth(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
}

for (const viewport of VIEWPORTS) {
  test(`the books by keyboard at ${viewport.width} px: trial balance, an account's postings, a top-up's timeline`, async ({
    browser,
  }, testInfo) => {
    // A sign-up (argon2id), a top-up settled by the bank's webhook and two pages analysed by axe: 60 s and more on a
    // loaded 2-core machine.
    test.setTimeout(120_000);
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    try {
      const email = await signUp(page);
      await makeAdmin(email);
      const refId = `books-${randomUUID().slice(0, 8)}`;
      expect(await apiTopup(page, refId, 4200)).toBe(201);

      // From the admin page's own navigation to the Books page.
      await page.goto("/admin");
      const nav = page.getByRole("navigation", { name: "Admin" });
      await expect(nav.getByRole("link", { name: "Overview" })).toHaveAttribute("aria-current", "page");
      await tabTo(page, nav.getByRole("link", { name: "Books" }));
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/\/admin\/books$/);
      await expect(page.getByRole("heading", { level: 1, name: "Books" })).toBeVisible();
      await expect(nav.getByRole("link", { name: "Books" })).toHaveAttribute("aria-current", "page");
      // The stack's database is shared with the integration and http suites, whose negative controls unbalance the
      // books on purpose: the total says what it finds, in words that agree with its flag (a fresh stack balances).
      const total = page.getByTestId("books-total");
      const balanced = await total.getAttribute("data-balanced");
      await expect(total).toContainText(
        balanced === "true" ? "All accounts together: $0.00. The books balance." : "The books do not balance",
      );
      const balance = page.getByTestId("trial-balance");
      for (const line of ["Bank clearing", "Rewards funded", "Merchants payable", "Refunds in flight"])
        await expect(balance.getByRole("link", { name: line })).toBeVisible();
      await expect(balance).toContainText("Wallets: owed to users");
      await expect(balance).toContainText("Wallets: owed by users (debts)");
      await expect(page.getByTestId("books-days").locator("tbody tr")).toHaveCount(14);
      await expect(page.locator("p", { hasText: "read at" }).locator("time")).toHaveText(/ UTC$/);
      expect(await pageWidth(page)).toBeLessThanOrEqual(viewport.width);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: testInfo.outputPath("books.png"), fullPage: true });

      // Into the bank clearing account: the top-up's posting, with its time in UTC, its user and its timeline.
      await tabTo(page, balance.getByRole("link", { name: "Bank clearing" }));
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/\/admin\/books\/bank_clearing$/);
      await expect(page.getByRole("heading", { level: 1, name: "Bank clearing" })).toBeVisible();
      // The bank's webhook credits the top-up a moment after it was made.
      const row = page.getByTestId("postings").locator("tbody tr", { hasText: email });
      await expect(async () => {
        await page.reload();
        await expect(row).toHaveCount(1, { timeout: 1_000 });
      }).toPass({ timeout: 20_000 });
      await expect(row).toHaveAttribute("data-type", "topup");
      await expect(row).toContainText("+$42.00");
      await expect(row).toContainText(/TP-[0-9A-Z]{4}-[0-9A-Z]{4}/);
      await expect(row.locator("time")).toHaveText(/ UTC$/);
      expect(await pageWidth(page)).toBeLessThanOrEqual(viewport.width);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: testInfo.outputPath("books-account.png"), fullPage: true });

      await tabTo(page, row.getByRole("link", { name: "top-up timeline" }));
      await page.keyboard.press("Enter");
      await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Top-up ${refId}`);

      // The wallet account is one per user: no page of its own. Nor has a name that is no account.
      for (const path of ["/admin/books/wallet", "/admin/books/no_such_account"]) {
        const response = await page.goto(path);
        expect(response?.status()).toBe(404);
        await expect(page.getByRole("heading", { level: 1 })).toHaveText("404 — page not found");
      }
    } finally {
      await context.close();
    }
  });
}
