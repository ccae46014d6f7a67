/**
 * The admin page in a real Chromium: a stuck top-up appears highlighted, "Reconcile now" finishes it,
 * and the user's own page then shows it succeeded. The top-up uses the sandbox's `sbx-nohook-` switch, so the
 * bank never sends its webhook: only the reconciler can learn that the charge succeeded.
 */
import { expect, test, type Page } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { makeAdmin, signUp, stackInfo, userIdOf, withDb } from "./helpers";

/** Polls the sandbox bank (every 100 ms, at most 10 s) until the charge of `merchantRef` has succeeded. */
async function waitForBankSuccess(page: Page, merchantRef: string): Promise<void> {
  await expect
    .poll(
      async () => {
        const response = await page.request.get(
          `${stackInfo().bankUrl}/charges?${new URLSearchParams({ merchantRef })}`,
        );
        return response.ok() ? ((await response.json()) as { status: string }).status : `HTTP ${response.status()}`;
      },
      { timeout: 10_000, intervals: [100] },
    )
    .toBe("succeeded");
}

test("a stuck top-up appears on the admin page, Reconcile now finishes it, and the user's page shows it succeeded", async ({
  browser,
}, testInfo) => {
  // Two accounts, two sign-ups, eight page loads, a reconciler pass and three full-page screenshots: about 15 s
  // on a quiet machine, and a run with two workers on 2 cores measured 32 s. 90 s bounds it with room to spare.
  test.setTimeout(90_000);
  // The user: signs up and tops up 15.00 through the API with the page's session.
  const userContext = await browser.newContext();
  const userPage = await userContext.newPage();
  const userEmail = await signUp(userPage);
  const userId = await userIdOf(userEmail);
  const refId = `sbx-nohook-e2e-${randomUUID().slice(0, 8)}`;
  // With the page's session cookie, as the page's own script would send it: a cookie-authenticated POST must be
  // same-origin (contract section 9), and Playwright's request context sends no Origin by itself.
  const created = await userPage.request.post("/api/v1/topups", {
    data: { refId, amount: 1500 },
    headers: { origin: new URL(userPage.url()).origin },
  });
  expect(created.status()).toBe(201);
  await waitForBankSuccess(userPage, `topup:${userId}:${refId}`);
  // Its request's lease has expired (test setup only, instead of waiting LEASE_MS). A day ago rather than a second:
  // a pass takes over the oldest expired leases first (at most 200), and under `npm test` the shared stack may hold
  // rows other suites left behind; this row must be among the first.
  await withDb((db) =>
    db.query(
      "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 day' WHERE user_id = $1 AND ref_id = $2",
      [userId, refId],
    ),
  );

  await userPage.goto("/wallet");
  await expect(userPage.getByTestId("history").locator(`li[data-ref="${refId}"]`)).toHaveAttribute(
    "data-status",
    "processing",
  );

  // A user who is not an admin gets a real 403 and the message.
  const denied = await userPage.goto("/admin");
  expect(denied?.status()).toBe(403);
  await expect(userPage.getByTestId("admin-forbidden")).toBeVisible();

  // The admin: another account, promoted by SQL (test setup).
  const adminContext = await browser.newContext();
  const adminPage = await adminContext.newPage();
  const adminEmail = await signUp(adminPage);
  await makeAdmin(adminEmail);

  await adminPage.goto("/admin?stuck=1");
  const row = adminPage.getByTestId("admin-topups").locator(`tr[data-ref="${refId}"]`);
  await expect(row).toHaveAttribute("data-stuck", "true");
  await expect(row).toHaveClass(/stuck/);
  await expect(row).toHaveAttribute("data-status", "processing");
  await adminPage.screenshot({ path: testInfo.outputPath("admin-stuck.png"), fullPage: true });

  await adminPage.getByRole("button", { name: "Reconcile now" }).click();
  const result = adminPage.getByTestId("reconcile-result");
  await expect(result).toBeVisible({ timeout: 15_000 });
  expect(Number(await result.locator('[data-counter="completed"]').textContent())).toBeGreaterThanOrEqual(1);
  await adminPage.screenshot({ path: testInfo.outputPath("admin-reconciled.png"), fullPage: true });

  // The row's timeline shows the take-over and the reconciler's completion.
  await adminPage.goto(`/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(refId)}`);
  await expect(adminPage.getByTestId("timeline-topup")).toHaveAttribute("data-status", "succeeded");
  await expect(
    adminPage.getByTestId("transitions").locator('li[data-actor="reconciler"][data-to="succeeded"]'),
  ).toHaveCount(1);
  await expect(adminPage.getByTestId("bank-charge")).toContainText("succeeded");

  // The user's page shows it succeeded, and the balance.
  await userPage.goto("/wallet");
  await expect(userPage.getByTestId("history").locator(`li[data-ref="${refId}"]`)).toHaveAttribute(
    "data-status",
    "succeeded",
  );
  await expect(userPage.getByTestId("balance")).toHaveText("$15.00");
  await userPage.screenshot({ path: testInfo.outputPath("wallet-after-reconcile.png"), fullPage: true });

  await userContext.close();
  await adminContext.close();
});
