/**
 * Accessibility: axe-core (@axe-core/playwright, WCAG 2.1 A and AA rules) finds no serious or critical violation on
 * any page, at a phone's width and a desktop's; and a top-up and a payment can be made with the keyboard alone.
 */
import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { signUp, walletState } from "./helpers";
import { forEveryPage, type SeededUser, seedUserIn } from "./pages";

const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
] as const;

let user: SeededUser;

test.beforeAll(async ({ browser }) => {
  // Two sign-ups, three top-ups, two payments, a reward and two tokens: 60 s and more on a loaded machine.
  test.setTimeout(180_000);
  user = await seedUserIn(browser);
});

for (const viewport of VIEWPORTS) {
  test(`axe-core finds no serious or critical violation on any page at ${viewport.width} px`, async ({ browser }) => {
    // Every page of e2e/pages.ts (about 25 with their opened states), each analysed by axe, several seconds each on a
    // loaded machine: 1.8-2.5 minutes at 390 px on a busy 2-core machine, so 10 minutes leaves room.
    test.setTimeout(600_000);
    const found: string[] = [];
    await forEveryPage(browser, user, viewport, async (visit, tab) => {
      // Open every "Show the numbers" too: what they hold must pass as well.
      for (const details of await tab.locator("details").all())
        await details.evaluate((d) => d.setAttribute("open", ""));
      const results = await new AxeBuilder({ page: tab })
        .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
        .analyze();
      for (const violation of results.violations) {
        if (violation.impact !== "serious" && violation.impact !== "critical") continue;
        const targets = violation.nodes.map((node) => node.target.join(" ")).slice(0, 5);
        found.push(`${visit.name}: ${violation.id} (${violation.impact}): ${targets.join(", ")}`);
      }
    });
    expect(found).toEqual([]);
  });
}

/** Presses Tab until `target` has the focus (at most 60 times: the page has far fewer stops before the forms). */
async function tabTo(page: Page, target: ReturnType<Page["locator"]>): Promise<void> {
  for (let presses = 0; presses < 60; presses++) {
    if (await target.evaluate((element) => element === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error("Tab never reached the target");
}

/** The focused element shows where the focus is (an outline). */
async function expectVisibleFocus(page: Page): Promise<void> {
  const outline = await page.evaluate(() => {
    const element = document.activeElement as HTMLElement;
    const style = getComputedStyle(element);
    return `${style.outlineStyle} ${style.outlineWidth}`;
  });
  expect(outline).not.toMatch(/^none|\s0px$/);
}

test("a top-up and a payment with the keyboard alone", async ({ page }, testInfo) => {
  // Sign-up, a top-up answered by the bank's webhook, a payment and some sixty key presses: 90 s on a loaded machine.
  test.setTimeout(90_000);
  await signUp(page);
  await page.goto("/wallet");
  await page.keyboard.press("Tab");
  // The first stop skips to the content.
  await expect(page.getByRole("link", { name: "Skip to content" })).toBeFocused();

  // Top-up: Tab to the amount choice, arrow to $25.00, Tab to the button, Enter.
  const topup = page.getByTestId("topup-form");
  await tabTo(page, topup.getByLabel("$10.00"));
  await page.keyboard.press("ArrowRight");
  await expect(topup.getByLabel("$25.00")).toBeChecked();
  await tabTo(page, topup.getByRole("button", { name: "Top up" }));
  await expectVisibleFocus(page);
  await page.keyboard.press("Enter");
  await expect(topup.getByTestId("result")).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
  await expect(page.getByTestId("balance")).toHaveText("$25.00");

  // Payment: Tab to the payee and type it, Tab to its amount choice, arrow to $5.00, Tab to the button, Space.
  const pay = page.getByTestId("pay-form");
  await tabTo(page, pay.getByLabel("Pay to"));
  await page.keyboard.type("Corner Coffee");
  await tabTo(page, pay.getByLabel("$1.00"));
  await page.keyboard.press("ArrowRight");
  await expect(pay.getByLabel("$5.00")).toBeChecked();
  await tabTo(page, pay.getByRole("button", { name: "Pay" }));
  await page.keyboard.press("Space");
  await expect(pay.getByTestId("result")).toHaveText("Paid $5.00.");
  await expect(page.getByTestId("balance")).toHaveText("$20.00");
  expect((await walletState(page)).balance).toBe(2000);
  await page.screenshot({ path: testInfo.outputPath("keyboard-only.png"), fullPage: true });
});
