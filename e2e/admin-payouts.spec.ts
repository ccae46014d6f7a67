/**
 * The admin payouts pages as an operator uses them, at 1280 px and on a 390 px phone: a payout the bank has not
 * answered for long is listed first under "Needs attention" (its money held, never given back on a timer), on the
 * payouts page and on the admin home; every payout is in the list; the keyboard alone reaches the page from the admin
 * navigation and a payout's timeline from the list, which shows its transitions and its postings (the hold); no page
 * is wider than the screen, and axe finds nothing serious.
 */
import { expect, type Page, test } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiPayout, apiTopup, axeViolations, makeAdmin, signUp, tabTo, userIdOf, walletState, withDb } from "./helpers";

/** Test setup: the payout was claimed six minutes ago, past the stuck age (instead of waiting five minutes). */
async function backdate(userId: string, refId: string): Promise<void> {
  await withDb((db) =>
    db.query(
      "UPDATE ledger_entries SET created_at = now() - interval '6 minutes' WHERE user_id = $1 AND type = 'payout' AND ref_id = $2",
      [userId, refId],
    ),
  );
}

async function pageWidth(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

for (const viewport of [
  { label: "desktop", width: 1280, height: 800 },
  { label: "phone", width: 390, height: 844 },
] as const) {
  test(`payouts needing attention come first, and a payout's timeline is a keyboard away (${viewport.width} px)`, async ({
    browser,
  }, testInfo) => {
    // Two sign-ups, a top-up settled by the bank's webhook and two payouts: a minute on a loaded machine.
    test.setTimeout(120_000);
    const userContext = await browser.newContext({ viewport });
    const user = await userContext.newPage();
    const email = await signUp(user);
    const userId = await userIdOf(email);
    expect(await apiTopup(user, `e2e-po-topup-${randomUUID().slice(0, 8)}`, 5000)).toBe(201);
    await expect.poll(async () => (await walletState(user)).balance, { timeout: 20_000 }).toBe(5000);
    // One the bank keeps answering 503 for (outcome unknown, money held), and one the bank pays.
    const stuckRef = `sbx-po-5xx-e2e-${randomUUID().slice(0, 8)}`;
    const paidRef = `e2e-po-paid-${randomUUID().slice(0, 8)}`;
    expect(await apiPayout(user, stuckRef, 1100)).toBe(201);
    expect(await apiPayout(user, paidRef, 1200)).toBe(201);
    await backdate(userId, stuckRef);

    const adminContext = await browser.newContext({ viewport });
    const admin = await adminContext.newPage();
    await makeAdmin(await signUp(admin));
    await admin.goto("/admin");
    // The admin home lists the payout too, linking to it.
    const homeRow = admin.getByTestId("needs-attention").locator(`li[data-type="payout"][data-ref="${stuckRef}"]`);
    await expect(homeRow).toHaveAttribute("data-why", "stuck");
    await expect(homeRow).toContainText("the bank has not said yet; money held");

    // Keyboard: Tab to "Payouts" in the admin navigation, Enter.
    const navLink = admin.getByRole("navigation", { name: "Admin" }).getByRole("link", { name: "Payouts" });
    await tabTo(admin, navLink);
    await admin.keyboard.press("Enter");
    await expect(admin).toHaveURL(/\/admin\/payouts$/);
    await expect(admin.getByRole("heading", { level: 1, name: "Payouts" })).toBeVisible();

    const attention = admin.getByTestId("payouts-attention");
    const stuckRow = attention.locator(`li[data-ref="${stuckRef}"]`);
    await expect(stuckRow).toHaveAttribute("data-why", "stuck");
    await expect(stuckRow).toContainText("the bank has not said yet; money held since");
    // The paid one is not listed there, but it is in the list of every payout (the bank's webhook pays it).
    await expect(attention.locator(`li[data-ref="${paidRef}"]`)).toHaveCount(0);
    const table = admin.getByTestId("admin-payouts");
    await expect(table.locator(`tr[data-ref="${stuckRef}"]`)).toHaveAttribute("data-extra", "stuck");
    await expect(async () => {
      await admin.reload();
      await expect(table.locator(`tr[data-ref="${paidRef}"]`)).toHaveAttribute("data-status", "succeeded", {
        timeout: 1_000,
      });
    }).toPass({ timeout: 20_000 });
    expect(await pageWidth(admin)).toBeLessThanOrEqual(viewport.width);
    expect(await axeViolations(admin)).toEqual([]);
    await admin.screenshot({ path: testInfo.outputPath(`payouts-${viewport.label}.png`), fullPage: true });

    // Keyboard: Tab to the stuck payout's link in "Needs attention", Enter: its timeline.
    await tabTo(admin, attention.locator(`li[data-ref="${stuckRef}"] a`));
    await admin.keyboard.press("Enter");
    await expect(admin).toHaveURL(new RegExp(`/admin/payouts/[^/]+/${stuckRef}$`));
    const payout = admin.getByTestId("timeline-payout");
    await expect(payout).toHaveAttribute("data-status", "processing");
    await expect(admin.getByTestId("outcome-unknown")).toContainText("The bank has not said yet");
    // Claimed, then sent to the bank (a reconciler's take-over after the lease may follow: same state, listed too).
    await expect(admin.getByTestId("transitions").locator('li[data-to="initiated"]')).toHaveCount(1);
    await expect(admin.getByTestId("transitions").locator('li[data-to="processing"]').first()).toBeVisible();
    await expect(admin.getByTestId("postings").locator('li[data-event="reserve"]')).toHaveCount(2);
    await expect(admin.getByTestId("timeline-return")).toContainText("Not returned.");
    expect(await pageWidth(admin)).toBeLessThanOrEqual(viewport.width);
    expect(await axeViolations(admin)).toEqual([]);
    await admin.screenshot({ path: testInfo.outputPath(`payout-timeline-${viewport.label}.png`), fullPage: true });

    // The paid one's timeline: settled by the bank's webhook, its delivery listed.
    await admin.goto(`/admin/payouts/${encodeURIComponent(userId)}/${paidRef}`);
    await expect(admin.getByTestId("postings").locator('li[data-event="settle"]')).toHaveCount(2);
    await expect(admin.getByTestId("webhooks").locator('tr[data-outcome="payout_paid"]')).toHaveCount(1);
    expect(await pageWidth(admin)).toBeLessThanOrEqual(viewport.width);
    expect(await axeViolations(admin)).toEqual([]);

    // Not for a user who is not an admin.
    await user.goto("/admin/payouts");
    await expect(user.getByTestId("admin-payouts")).toHaveCount(0);
    await userContext.close();
    await adminContext.close();
  });
}
