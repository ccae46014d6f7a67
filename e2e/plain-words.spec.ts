/**
 * Plain words and forms that keep what was typed: every refusal on the wallet, sign-in, sign-up, tokens and admin
 * pages is a sentence for people (lib/web/outcome-sentences.ts), never the API's words for programmers ("JSON",
 * "minor units", "key", "parameters"); every form keeps what was typed after every error; inputs enforce what their
 * hints say; and a refused or failed operation never looks like money that moved.
 */
import { expect, type Page, test } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiTopup, jargonOn, makeAdmin, signUp, walletState } from "./helpers";

async function expectNoJargon(page: Page, where: string): Promise<void> {
  expect(await jargonOn(page), `jargon on ${where}`).toEqual([]);
}

test("sign-up and sign-in: refusals in plain words, the email kept, the password length enforced as the hint says", async ({
  page,
  browser,
}) => {
  const email = await signUp(page);
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in\?signed-out=1$/);
  await expect(page.getByTestId("signed-out")).toHaveText("You are signed out.");

  // Sign-in with a wrong password: one sentence, both fields keep what was typed.
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator(".form-error")).toHaveText("Wrong email or password.");
  await expect(page.getByLabel("Email")).toHaveValue(email);
  await expect(page.getByLabel("Password")).toHaveValue("not the password");
  await expectNoJargon(page, "/sign-in after a refusal");

  // Sign-up: the hint says 10 to 128 characters, and the field enforces it before anything is sent.
  const other = await browser.newContext();
  const signUpPage = await other.newPage();
  await signUpPage.goto("/sign-up");
  await expect(signUpPage.locator("#password-hint")).toHaveText("10 to 128 characters.");
  const fresh = `e2e-${randomUUID().slice(0, 12)}@example.test`;
  await signUpPage.getByLabel("Email").fill(fresh);
  await signUpPage.getByLabel("Password").fill("short");
  await signUpPage.getByRole("button", { name: "Create account" }).click();
  expect(await signUpPage.getByLabel("Password").evaluate((input: HTMLInputElement) => input.validity.tooShort)).toBe(
    true,
  );
  await expect(signUpPage).toHaveURL(/\/sign-up$/);
  // The server enforces the same rule for a browser that does not: the email stays, the sentence says why.
  await signUpPage.getByLabel("Password").evaluate((input: HTMLInputElement) => input.removeAttribute("minlength"));
  await signUpPage.getByRole("button", { name: "Create account" }).click();
  await expect(signUpPage.getByTestId("sign-up-error")).toHaveText("Use a password of 10 to 128 characters.");
  await expect(signUpPage.getByLabel("Email")).toHaveValue(fresh);
  await expect(signUpPage.getByLabel("Password")).toHaveValue("short");
  // A taken email: said plainly, the email kept.
  await signUpPage.getByLabel("Email").fill(email);
  await signUpPage.getByLabel("Password").fill("a long enough password");
  await signUpPage.getByRole("button", { name: "Create account" }).click();
  await expect(signUpPage.getByTestId("sign-up-error")).toHaveText(
    "An account with this email already exists. Sign in instead.",
  );
  await expect(signUpPage.getByLabel("Email")).toHaveValue(email);
  await expectNoJargon(signUpPage, "/sign-up after refusals");
  await other.close();
});

test("wallet: an amount out of range, a payment the balance cannot cover and a reused form are sentences; typed amounts stay; nothing looks paid", async ({
  page,
  context,
  browser,
}, testInfo) => {
  // A sign-up, three refusals, a second tab and a reload: 40 s here on a quiet machine, over 60 s under load.
  test.setTimeout(120_000);
  await signUp(page);
  const topup = page.getByTestId("topup-form");
  const pay = page.getByTestId("pay-form");

  // The hint states the range, and the input refuses what the hint excludes before anything is sent.
  await expect(topup.locator(".hint")).toHaveText("Enter an amount from $0.01 to $10,000.00, such as 12.50.");
  await topup.getByLabel("Other amount").fill("12.345");
  await topup.getByRole("button", { name: "Top up" }).click();
  expect(
    await topup.getByLabel("Other amount").evaluate((input: HTMLInputElement) => input.validity.patternMismatch),
  ).toBe(true);
  await expect(topup.getByTestId("result")).toHaveCount(0);

  // Above the largest amount: the server's sentence is the hint, and the typed amount stays.
  await topup.getByLabel("Other amount").fill("20000");
  await topup.getByRole("button", { name: "Top up" }).click();
  await expect(topup.getByTestId("result")).toHaveText("Enter an amount from $0.01 to $10,000.00, such as 12.50.");
  await expect(topup.getByLabel("Other amount")).toHaveValue("20000");
  await expect(topup.getByLabel("Other", { exact: true })).toBeChecked();

  // A payment the balance cannot cover: refused in plain words, the amount kept, and the statement shows it struck
  // through as not paid (no money moved).
  await pay.getByLabel("Pay to").fill("Corner Coffee");
  await pay.getByLabel("Other amount").fill("99.99");
  await pay.getByRole("button", { name: "Pay" }).click();
  await expect(pay.getByTestId("result")).toHaveText(
    "Not enough money in your wallet for this payment of $99.99. Nothing was paid.",
  );
  await expect(pay.getByLabel("Other amount")).toHaveValue("99.99");
  const refused = page.getByTestId("history").locator('li[data-type="payment"]').first();
  await expect(refused).toHaveAttribute("data-status", "failed");
  await expect(refused.locator('[data-moved="false"]')).toContainText("$99.99");
  await expect(refused.locator('[data-moved="false"]')).toContainText("not paid");
  await expect(refused).not.toContainText("-$99.99");
  expect((await walletState(page)).balance).toBe(0);

  // A declined top-up: struck through, "not charged", with the bank's reason in words.
  expect(await apiTopup(page, `sbx-decline-${randomUUID().slice(0, 8)}`, 1234)).toBe(201);
  await page.reload();
  const declined = page.getByTestId("history").locator('li[data-type="topup"][data-status="failed"]').first();
  await expect(declined).toContainText("not charged");
  // The reason, in words, is on the movement's own page.
  await declined.getByRole("link").click();
  await expect(page.getByTestId("receipt-status")).toContainText("the bank declined the payment");
  await expectNoJargon(page, "a declined top-up's page");
  await page.goto("/wallet");

  // The same form sent again with another amount from a page that did not follow (no JavaScript, so no live
  // updates: the same reference): said plainly, and the chosen amount stays chosen.
  const stale = await browser.newContext({ javaScriptEnabled: false });
  await stale.addCookies(await context.cookies());
  const second = await stale.newPage();
  await second.goto("/wallet");
  await topup.getByLabel("$10.00").check();
  await topup.getByRole("button", { name: "Top up" }).click();
  await expect(topup.getByTestId("result")).toContainText("Top-up of $10.00");
  await second.getByTestId("topup-form").getByLabel("$25.00").check();
  await second.getByTestId("topup-form").getByRole("button", { name: "Top up" }).click();
  // What happened, said as it happened (decision 055): this one was not made, and pressing the button again makes it.
  await expect(second.getByTestId("topup-form").getByTestId("result")).toHaveText(
    "This form had already been used, in another tab or window, for a top-up with a different amount, so this top-up of $25.00 was not made and nothing of it was charged. The form is ready for a new one: press Top up again to make it.",
  );
  await expect(second.getByTestId("topup-form").getByLabel("$25.00")).toBeChecked();
  await expectNoJargon(second, "/wallet after a reused form");
  // And it is true: the page came back with a form for a new top-up, and pressing the button again makes it.
  await second.getByTestId("topup-form").getByRole("button", { name: "Top up" }).click();
  await expect(second.getByTestId("topup-form").getByTestId("result")).toContainText("Top-up of $25.00");
  await expectNoJargon(page, "/wallet after refusals");
  await page.screenshot({ path: testInfo.outputPath("wallet-refusals.png"), fullPage: true });
  await stale.close();
});

test("tokens and admin pages: refusals in plain words, the typed name kept, no programmers' words", async ({
  page,
}) => {
  // A sign-up and four page loads, the admin page reading its charts and invariants: 90 s on a loaded machine.
  test.setTimeout(90_000);
  const email = await signUp(page);
  await page.goto("/settings/tokens");
  await page.getByLabel("Name").fill("   ");
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.locator(".form-error")).toHaveText(
    "Give the token a name of 1 to 100 characters, without line breaks or other control characters.",
  );
  await expect(page.getByLabel("Name")).toHaveValue("   ");
  await expectNoJargon(page, "/settings/tokens after a refusal");

  await makeAdmin(email);
  await page.goto("/admin?user=not-an-email");
  await expect(page.locator(".form-error")).toContainText("were not understood");
  await expectNoJargon(page, "/admin with a bad filter");
  await page.goto("/admin");
  const first = page.getByTestId("admin-topups").locator("tbody tr a").first();
  if ((await first.count()) > 0) {
    await first.click();
    await expect(page.getByTestId("timeline-topup")).toBeVisible();
    await expectNoJargon(page, "an admin timeline page");
  }
});
