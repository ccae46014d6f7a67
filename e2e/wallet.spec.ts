/**
 * The wallet page in a real Chromium: the walking skeleton, duplicate submits (case C09) and the forms' references
 * (case C20: random, kept until claimed, shared by tabs, never a client's). Screenshots are saved as test artefacts.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { signUp, walletState } from "./helpers";

test("sign up, top up 25.00, see the status reach succeeded and the balance show it", async ({ page }, testInfo) => {
  await signUp(page);
  const form = page.getByTestId("topup-form");
  await form.getByLabel("25.00").check();
  await form.getByRole("button", { name: "Top up" }).click();
  await expect(form.getByTestId("result")).toContainText("$25.00");
  // The list updates without a reload once the bank's webhook lands.
  await expect(page.getByTestId("history").locator('li[data-type="topup"]').first()).toHaveAttribute(
    "data-status",
    "succeeded",
    {
      timeout: 15_000,
    },
  );
  await expect(page.getByTestId("balance")).toHaveText("$25.00");
  // The answer follows the top-up: it says it succeeded, without a reload.
  await expect(form.getByTestId("result")).toHaveAttribute("data-status", "succeeded");
  await expect(form.getByTestId("result")).toContainText("succeeded");
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
  await expect(form.getByTestId("result")).toContainText("$10.00");
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
      await expect(result).toContainText("$25.00");
      // Each tab's answer follows the one top-up until the bank's answer lands.
      await expect(result).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
      return (await result.textContent())!.replace(" (You had already sent this form; it was not done twice.)", "");
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

test("C20: an API top-up named like the old count scheme, then three form submits: three new top-ups, never a used reference", async ({
  page,
}, testInfo) => {
  // Five server round trips through the page and two through the API, then the bank's webhooks: three times the
  // 30 s budget (playwright.config.ts), which a loaded 2-core machine needs; the assertions are unchanged.
  test.slow();
  await signUp(page);
  const form = page.getByTestId("topup-form");
  const refField = form.locator('input[name="refId"]');
  const origin = { origin: new URL(page.url()).origin };
  const firstShown = await refField.inputValue();
  expect(firstShown).toMatch(/^web:[0-9a-f-]{36}$/);
  // An API client can read the page, but the forms' namespace is not its to use: 400, nothing claimed.
  const taken = await page.request.post("/api/v1/topups", {
    data: { refId: firstShown, amount: 700 },
    headers: origin,
  });
  expect(taken.status()).toBe(400);
  expect(((await taken.json()) as { code: string }).code).toBe("invalid_request");
  // The case's input: the client tops up with what the old scheme would have shown two submits later.
  const ahead = await page.request.post("/api/v1/topups", {
    data: { refId: "web-topup-3", amount: 700 },
    headers: origin,
  });
  expect(ahead.status()).toBe(201);

  const shownRefs: string[] = [];
  for (const preset of ["10.00", "25.00", "50.00"]) {
    const shown = await refField.inputValue();
    // Never a reference already used: not one this form showed before, not one of the user's top-ups.
    expect(shownRefs).not.toContain(shown);
    expect((await walletState(page)).topups.map((topup) => topup.refId)).not.toContain(shown);
    shownRefs.push(shown);
    await form.getByLabel(preset).check();
    await form.getByRole("button", { name: "Top up" }).click();
    const result = form.getByTestId("result");
    await expect(result).toContainText(`$${preset}`);
    await expect(result).not.toContainText("already sent");
    // The page re-renders after the claim with the next reference.
    await expect(refField).not.toHaveValue(shown);
  }
  expect(shownRefs[0]).toBe(firstShown);
  await page.screenshot({ path: testInfo.outputPath("c20-after-three-submits.png"), fullPage: true });
  await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(700 + 1000 + 2500 + 5000);
  const refIds = (await walletState(page)).topups.map((topup) => topup.refId).sort();
  expect(refIds).toEqual(["web-topup-3", ...shownRefs].sort());
});

test("C20: a form whose reference was not issued by the server is refused and charges nothing", async ({ page }) => {
  // Two refused submits after the sign-up: the same allowance as the scenario above.
  test.slow();
  await signUp(page);
  const form = page.getByTestId("topup-form");
  // An edited hidden field: the count scheme's next name, then a well-formed reference the server never issued.
  for (const forged of ["web-topup-1", `web:${randomUUID()}`]) {
    // Any re-render of the form (choosing the amount, a live-status update) writes the server-issued reference back
    // into the hidden field, so the forged value is written and submitted in one task, with nothing in between.
    await form.getByLabel("10.00").check();
    await form.locator('input[name="refId"]').evaluate((input: HTMLInputElement, value) => {
      input.value = value;
      input.form?.requestSubmit();
    }, forged);
    await expect(form.getByTestId("result")).toContainText("Reload the page");
    await expect(form.getByTestId("result")).toHaveAttribute("role", "alert");
  }
  expect((await walletState(page)).topups).toHaveLength(0);
});
