/**
 * What looked unfinished: a page that fails shows the app's own error page (what happened, the way back, the
 * error's reference); the sign-in page after signing out shows one message at a time; and a browser whose session
 * ended because the password was changed in another one is told so on the sign-in page (docs/decisions/056).
 */
import { expect, test } from "@playwright/test";
import { signUp } from "./helpers";

for (const viewport of [
  { label: "phone", width: 390, height: 844 },
  { label: "desktop", width: 1280, height: 800 },
] as const) {
  test(`a page that fails shows the error page in the layout, with its reference and the way back, at ${viewport.width} px`, async ({
    browser,
  }, testInfo) => {
    test.setTimeout(60_000);
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    await signUp(page);
    // /error-drill throws while rendering; it exists only in the test stack (ERROR_DRILL=1).
    const response = await page.goto("/error-drill");
    expect(response?.status()).toBe(500);
    const card = page.getByTestId("error-page");
    await expect(card.getByRole("heading", { level: 1 })).toHaveText("Something went wrong");
    await expect(card).toContainText("Trying again is safe");
    // Next's digest of the server error: the reference its log line carries.
    await expect(card.getByTestId("error-reference").locator("code")).toHaveText(/^\S+$/);
    await expect(card.getByRole("button", { name: "Try again" })).toBeVisible();
    // The layout is there: the header and its navigation.
    await expect(page.getByRole("button", { name: "Sign out", exact: true })).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
    await page.screenshot({ path: testInfo.outputPath(`error-${viewport.label}.png`), fullPage: true });
    await card.getByRole("link", { name: "Go to your wallet" }).click();
    await expect(page).toHaveURL(/\/wallet$/);
    await context.close();
  });
}

test("after signing out, a wrong password shows only that message, not the signed-out one", async ({ page }) => {
  test.setTimeout(60_000);
  const email = await signUp(page);
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await expect(page).toHaveURL(/\/sign-in\?signed-out=1$/);
  await expect(page.getByTestId("signed-out")).toHaveText("You are signed out.");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("not-the-password-1");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator("#sign-in-error")).toHaveText("Wrong email or password.", { timeout: 20_000 });
  await expect(page.getByTestId("signed-out")).toHaveCount(0);
  await expect(page.getByText("You are signed out.")).toHaveCount(0);
});

test("a password change signs the other browser out, and its sign-in page says why", async ({ browser }, testInfo) => {
  test.setTimeout(90_000);
  const here = await browser.newContext();
  const elsewhere = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await here.newPage();
  const other = await elsewhere.newPage();
  const email = await signUp(page);
  await other.goto("/sign-in");
  await other.getByLabel("Email").fill(email);
  await other.getByLabel("Password").fill("correct-horse-battery");
  await other.getByRole("button", { name: "Sign in" }).click();
  await expect(other).toHaveURL(/\/wallet$/, { timeout: 20_000 });

  await page.goto("/settings/security");
  await page.getByLabel("Current password").fill("correct-horse-battery");
  await page.getByLabel("New password").fill("a-new-horse-battery");
  await page.getByRole("button", { name: "Change password" }).click();
  await expect(page).toHaveURL(/result=changed/, { timeout: 20_000 });

  // The other browser's next page: the sign-in page, with the reason.
  await other.goto("/wallet");
  await expect(other).toHaveURL(/\/sign-in\?ended=password-changed$/);
  await expect(other.getByTestId("session-ended")).toHaveText(
    "You were signed out because your password was changed in another browser or device. Sign in with the new password.",
  );
  await other.screenshot({ path: testInfo.outputPath("signed-out-elsewhere.png"), fullPage: true });
  // Signing out in this browser says only "signed out", never the password reason.
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await expect(page).toHaveURL(/\/sign-in\?signed-out=1$/);
  await expect(page.getByTestId("session-ended")).toHaveCount(0);
  await here.close();
  await elsewhere.close();
});
