/**
 * Mail people get, end to end (docs/decisions/054-mail-outbox.md): the real app sends through SMTP to the test
 * stack's mail catcher, and these tests read what arrived, as a person would, then follow its links in the browser.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { apiTopup, signUp, userIdOf, withDb } from "./helpers";
import { linkIn, mailTo, waitForMail } from "./mail-helpers";

test.describe("mail at 390 and 1280 px", () => {
  for (const width of [390, 1280]) {
    test(`sign up, then confirm the address from the caught mail (${width} px)`, async ({ page }) => {
      await page.setViewportSize({ width, height: 900 });
      const email = await signUp(page);
      await expect(page.getByTestId("address-check")).toBeVisible();
      const check = await waitForMail(email, /Confirm your email address/);
      await page.goto(linkIn(check, "/api/auth/verify-email"));
      await expect(page).toHaveURL(/\/wallet/);
      await expect(page.getByTestId("address-check")).toHaveCount(0);
      expect(
        await withDb(
          async (db) =>
            (await db.query('SELECT "emailVerified" AS v FROM "user" WHERE email = $1', [email])).rows[0]?.v,
        ),
      ).toBe(true);
    });

    test(`forget the password and reset it from the mail, with the keyboard (${width} px)`, async ({ page }) => {
      await page.setViewportSize({ width, height: 900 });
      const email = await signUp(page);
      await page.context().clearCookies();
      await page.goto("/sign-in");
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      await expect(page).toHaveURL(/\/forgot-password$/);
      expect((await new AxeBuilder({ page }).analyze()).violations).toEqual([]);
      await page.getByLabel("Email").focus();
      await page.keyboard.type(email);
      await page.keyboard.press("Enter");
      await expect(page.getByTestId("forgot-result")).toContainText("on its way");

      const reset = await waitForMail(email, /Reset your wallet password/);
      await page.goto(linkIn(reset, "/api/auth/reset-password/"));
      await expect(page).toHaveURL(/\/reset-password\?token=/);
      expect((await new AxeBuilder({ page }).analyze()).violations).toEqual([]);
      await page.getByLabel("New password").focus();
      await page.keyboard.type("a-brand-new-password");
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/\/sign-in\?password-reset=1$/);
      await expect(page.getByTestId("password-reset")).toBeVisible();

      // The new password signs in; the link is spent.
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("a-brand-new-password");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(page).toHaveURL(/\/wallet$/);
      await waitForMail(email, /password was changed/);
      await page.context().clearCookies();
      await page.goto(linkIn(reset, "/api/auth/reset-password/"));
      await expect(page.getByTestId("reset-link-invalid")).toBeVisible();
    });
  }

  test("forgot password for an address without an account answers the same, and sends nothing", async ({ page }) => {
    const nobody = `nobody-${randomUUID().slice(0, 8)}@example.test`;
    await page.goto("/forgot-password");
    await page.getByLabel("Email").fill(nobody);
    await page.getByRole("button", { name: "Send me a link" }).click();
    await expect(page.getByTestId("forgot-result")).toHaveText(
      `If ${nobody} has a wallet, a link to choose a new password is on its way. It works once, for 1 hour.`,
    );
    expect(await mailTo(nobody)).toEqual([]);
  });

  test("a receipt for a top-up arrives once, though its webhook is delivered three times", async ({ page }) => {
    const email = await signUp(page);
    const userId = await userIdOf(email);
    const refId = `sbx-dup-${randomUUID().slice(0, 8)}`;
    expect(await apiTopup(page, refId, 2500)).toBe(201);
    // The bank's duplicate switch delivers the charge's webhook three times: wait until all three arrived ...
    await expect
      .poll(
        () =>
          withDb(async (db) => {
            const { rows } = await db.query<{ deliveries: number }>(
              `SELECT coalesce(sum(deliveries), 0)::int AS deliveries FROM bank_webhook_events
                WHERE merchant_ref = $1 AND type = 'charge.succeeded'`,
              [`topup:${userId}:${refId}`],
            );
            return rows[0]?.deliveries ?? 0;
          }),
        { timeout: 30_000, intervals: [200] },
      )
      .toBe(3);
    // ... and until the receipt's one row is settled, then count what arrived.
    await expect
      .poll(
        () =>
          withDb(async (db) => {
            const { rows } = await db.query<{ status: string }>(
              `SELECT status FROM mail_outbox WHERE user_id = $1 AND kind = 'receipt'`,
              [userId],
            );
            return rows.map((row) => row.status);
          }),
        { timeout: 20_000, intervals: [200] },
      )
      .toEqual(["sent"]);
    const receipts = (await mailTo(email)).filter((mail) => /Top-up of \$25\.00 received/.test(mail.subject));
    expect(receipts).toHaveLength(1);
    expect(receipts[0]?.text).toContain(refId);
  });
});
