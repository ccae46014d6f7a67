/**
 * The wallet page in a real Chromium: the walking skeleton (issue 2) and duplicate submits (issue 3 item 10,
 * case C09). Screenshots are saved as test artefacts.
 */
import { expect, test } from "@playwright/test";
import { signUp, walletState } from "./helpers";

test("sign up, top up 25.00, see the status reach succeeded and the balance show it", async ({ page }, testInfo) => {
  await signUp(page);
  const form = page.getByTestId("topup-form");
  await form.getByLabel("25.00").check();
  await form.getByRole("button", { name: "Top up" }).click();
  await expect(form.getByTestId("result")).toContainText("25.00 USD");
  // The list updates without a reload once the bank's webhook lands.
  await expect(page.getByTestId("topups").locator("tbody tr").first()).toHaveAttribute("data-status", "succeeded", {
    timeout: 15_000,
  });
  await expect(page.getByTestId("balance")).toHaveText("25.00");
  await page.screenshot({ path: testInfo.outputPath("wallet-after-topup.png"), fullPage: true });
  const state = await walletState(page);
  expect(state.balance).toBe(2500);
  expect(state.topups).toHaveLength(1);
});

test("C09: a double click within 30 ms gives one credit, and the button is disabled and pending while it runs", async ({
  page,
}, testInfo) => {
  await signUp(page);
  // Hold the server action's request until the pending state has been checked (deterministic, no timing).
  let releaseAction!: () => void;
  const actionHeld = new Promise<void>((resolve) => (releaseAction = resolve));
  let actionPosts = 0;
  await page.route("**/wallet", async (route) => {
    if (route.request().method() === "POST") {
      actionPosts += 1;
      await actionHeld;
    }
    await route.continue();
  });
  const form = page.getByTestId("topup-form");
  const button = form.getByTestId("submit");
  await form.getByLabel("10.00").check();
  await button.click();
  await button.click({ delay: 0, force: true, timeout: 30, noWaitAfter: true }).catch(() => {});
  await expect(button).toBeDisabled();
  await expect(button).toHaveAttribute("aria-busy", "true");
  await expect(button).toHaveText("Working…");
  await page.screenshot({ path: testInfo.outputPath("topup-pending.png") });
  releaseAction();
  await expect(form.getByTestId("result")).toContainText("10.00 USD");
  await expect(button).toBeEnabled();
  await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(1000);
  const state = await walletState(page);
  expect(state.topups).toHaveLength(1);
  expect(actionPosts).toBeGreaterThanOrEqual(1);
});

test("C09: two submits of the same form in the same tick (bypassing the disabled button) still credit once", async ({
  page,
}) => {
  await signUp(page);
  await page.getByTestId("topup-form").getByLabel("50.00").check();
  await page.evaluate(() => {
    const form = document.querySelector<HTMLFormElement>('[data-testid="topup-form"]')!;
    form.requestSubmit();
    form.requestSubmit();
  });
  await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(5000);
  expect((await walletState(page)).topups).toHaveLength(1);
});

test("the same top-up form submitted from two tabs at once gives one credit and both tabs end on the same result", async ({
  context,
}, testInfo) => {
  const first = await context.newPage();
  await signUp(first);
  const second = await context.newPage();
  await second.goto("/wallet");
  const refOf = (page: typeof first) => page.getByTestId("topup-form").locator('input[name="refId"]').inputValue();
  expect(await refOf(second)).toBe(await refOf(first));
  for (const page of [first, second]) await page.getByTestId("topup-form").getByLabel("25.00").check();
  await Promise.all(
    [first, second].map((page) => page.getByTestId("topup-form").getByRole("button", { name: "Top up" }).click()),
  );
  const results = await Promise.all(
    [first, second].map(async (page) => {
      const result = page.getByTestId("topup-form").getByTestId("result");
      await expect(result).toContainText("25.00 USD");
      return (await result.textContent())!.replace(" (already submitted)", "");
    }),
  );
  expect(results[0]).toBe(results[1]);
  await first.screenshot({ path: testInfo.outputPath("tab-1.png") });
  await second.screenshot({ path: testInfo.outputPath("tab-2.png") });
  await expect.poll(async () => (await walletState(first)).balance, { timeout: 15_000 }).toBe(2500);
  expect((await walletState(first)).topups).toHaveLength(1);
});

test("the top-up form works before JavaScript loads (plain form POST)", async ({ browser }) => {
  const setup = await browser.newContext();
  const page = await setup.newPage();
  await signUp(page);
  const cookies = await setup.cookies();
  const noJs = await browser.newContext({ javaScriptEnabled: false });
  await noJs.addCookies(cookies);
  const plain = await noJs.newPage();
  await plain.goto("/wallet");
  await plain.getByTestId("topup-form").getByLabel("10.00").check();
  await plain.getByTestId("topup-form").getByRole("button", { name: "Top up" }).click();
  await expect.poll(async () => (await walletState(page)).topups.length, { timeout: 15_000 }).toBe(1);
  await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(1000);
  await noJs.close();
  await setup.close();
});
