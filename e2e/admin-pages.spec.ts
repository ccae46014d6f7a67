/**
 * The admin pages as an operator uses them: the refund form says what is left to refund and asks to confirm (with
 * the keyboard alone), the webhook table of a top-up fits 1280 px and reads on a phone, "Show the numbers" keeps a
 * phone's page 390 px wide, the invariants read in plain words, every time on the page is UTC and says so, and an
 * admin who signs in lands on the admin page. (Every page and state also passes e2e/layout.spec.ts and
 * e2e/accessibility.spec.ts through e2e/pages.ts.)
 */
import { expect, type Browser, type Page, test } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiTopup, makeAdmin, signUp, tabTo, userIdOf } from "./helpers";

/** A user with a succeeded top-up of `amountMinor` (its webhook delivered three times), and a signed-in admin. */
async function userWithTopupAndAdmin(
  browser: Browser,
  viewport: { width: number; height: number },
  amountMinor: number,
): Promise<{ admin: Page; timelinePath: string; close: () => Promise<void> }> {
  const userContext = await browser.newContext({ viewport });
  const userPage = await userContext.newPage();
  const email = await signUp(userPage);
  const refId = `sbx-dup-admin-${randomUUID().slice(0, 8)}`;
  expect(await apiTopup(userPage, refId, amountMinor)).toBe(201);
  const adminContext = await browser.newContext({ viewport });
  const admin = await adminContext.newPage();
  await makeAdmin(await signUp(admin));
  const timelinePath = `/admin/topups/${encodeURIComponent(await userIdOf(email))}/${encodeURIComponent(refId)}`;
  // The bank's webhook settles the top-up a moment after it is made.
  await expect(async () => {
    await admin.goto(timelinePath);
    await expect(admin.getByTestId("timeline-topup")).toHaveAttribute("data-status", "succeeded", { timeout: 1_000 });
    await expect(admin.getByTestId("webhooks").locator("tbody tr").first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  return {
    admin,
    timelinePath,
    close: async () => {
      await userContext.close();
      await adminContext.close();
    },
  };
}

test("the refund form shows what is left to refund and refunds only after a confirmation, by keyboard alone", async ({
  browser,
}, testInfo) => {
  // Two sign-ups, a top-up settled by the bank's webhook, a refund at the bank: 60 s on a loaded machine.
  test.setTimeout(120_000);
  const { admin, close } = await userWithTopupAndAdmin(browser, { width: 1280, height: 800 }, 2500);
  const form = admin.getByTestId("refund-form");
  await expect(form.getByTestId("refundable")).toHaveText("Refundable: $25.00 of $25.00");

  // Keyboard only: Tab to the amount, type it, Enter reviews it.
  const amount = form.getByLabel(/Amount to refund/);
  await tabTo(admin, amount);
  await admin.keyboard.type("5");
  await admin.keyboard.press("Enter");
  const confirm = form.getByTestId("refund-confirm");
  await expect(confirm).toBeFocused();
  await expect(confirm).toContainText("Refund $5.00 of this top-up to");
  await admin.screenshot({ path: testInfo.outputPath("refund-confirm.png"), fullPage: true });
  // Nothing is refunded before the confirmation.
  await admin.reload();
  await expect(admin.getByTestId("timeline-refunds")).toContainText("No refunds.");
  await expect(form.getByTestId("refundable")).toHaveText("Refundable: $25.00 of $25.00");

  // Again, and this time confirmed: Tab to "Confirm refund", Enter.
  await tabTo(admin, form.getByLabel(/Amount to refund/));
  await admin.keyboard.type("5");
  await admin.keyboard.press("Enter");
  await expect(confirm).toBeFocused();
  await tabTo(admin, confirm.getByRole("button", { name: "Confirm refund" }));
  await admin.keyboard.press("Enter");
  await expect(form.getByTestId("refund-outcome")).toBeVisible({ timeout: 20_000 });
  await expect(admin.getByTestId("timeline-refunds").locator("li")).toHaveCount(1);
  await expect(form.getByTestId("refundable")).toHaveText("Refundable: $20.00 of $25.00");
  await admin.screenshot({ path: testInfo.outputPath("refund-done.png"), fullPage: true });
  await close();
});

for (const viewport of [
  { label: "phone", width: 390, height: 844 },
  { label: "desktop", width: 1280, height: 800 },
] as const) {
  test(`a top-up's webhook table and the charts' numbers fit a ${viewport.width} px ${viewport.label}; times are UTC`, async ({
    browser,
  }, testInfo) => {
    test.setTimeout(120_000);
    const { admin, close } = await userWithTopupAndAdmin(browser, viewport, 1500);
    const pageWidth = () => admin.evaluate(() => document.documentElement.scrollWidth);
    expect(await pageWidth()).toBeLessThanOrEqual(viewport.width);
    const table = admin.getByTestId("webhooks");
    expect((await table.boundingBox())!.width).toBeLessThanOrEqual(viewport.width);
    // The first and last delivery times are one element (on a phone's card no "/" stands on a row of its own).
    const seen = table.locator('td[data-label="First and last seen"]').first();
    await expect(seen.locator("> *")).toHaveCount(1);
    await expect(seen).not.toContainText("/");
    await expect(seen.locator("time")).toHaveCount(2);
    await admin.screenshot({ path: testInfo.outputPath(`timeline-${viewport.label}.png`), fullPage: true });
    await expectUtcTimes(admin);

    await admin.goto("/admin");
    await expect(admin.getByTestId("audit")).toBeVisible({ timeout: 20_000 });
    for (const summary of await admin.getByText("Show the numbers").all()) await summary.click();
    await expect(admin.getByRole("region", { name: "Top-ups per hour, as numbers" })).toBeVisible();
    expect(await pageWidth()).toBeLessThanOrEqual(viewport.width);
    await admin.screenshot({ path: testInfo.outputPath(`numbers-${viewport.label}.png`), fullPage: true });
    await expectUtcTimes(admin);
    await close();
  });
}

/** Every time on the page is written in UTC and says so ("Dec 2, 2026, 14:03:07 UTC"), and so are the charts' hours. */
async function expectUtcTimes(page: Page): Promise<void> {
  const times = await page.locator("main time").allInnerTexts();
  expect(times.length).toBeGreaterThan(0);
  for (const text of times) expect(text).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{2}:\d{2}:\d{2} UTC$/);
  for (const header of await page.locator("table.numbers thead th:first-child").allInnerTexts())
    expect(header).toBe("Hour (UTC)");
}

test("the invariants are named in plain words, and an admin who signs in lands on the admin page", async ({ page }) => {
  test.setTimeout(90_000);
  const email = await signUp(page);
  await makeAdmin(email);
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await expect(page).toHaveURL(/\/sign-in\?signed-out=1$/);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct-horse-battery");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/admin$/, { timeout: 20_000 });
  // The bare address sends an admin there too.
  await page.goto("/");
  await expect(page).toHaveURL(/\/admin$/);

  const checks = page.getByTestId("audit").locator("li[data-check]");
  await expect(checks.first()).toBeVisible({ timeout: 20_000 });
  const names = await checks.evaluateAll((items) => items.map((item) => item.getAttribute("data-check")!));
  expect(names.length).toBeGreaterThanOrEqual(11);
  for (const [index, name] of names.entries()) {
    // The row's own text: its label, without the lists of violations and notes under it.
    const text = await checks.nth(index).evaluate((item) =>
      [...item.childNodes]
        .filter((node) => node.nodeName !== "UL")
        .map((node) => node.textContent)
        .join(""),
    );
    // No code name (snake_case) in what people read, and a sentence of its own.
    expect(text, name).not.toMatch(/\b[a-z]+_[a-z_]+\b/);
    expect(text.split(/\s+/).length, name).toBeGreaterThanOrEqual(4);
  }
});
