/**
 * The wallet's history, payments to someone and each movement's page (docs/decisions/055), at a 1280 px desktop and
 * a 390 px phone: a payment to a payee with a note made and found by search with the keyboard alone, its receipt
 * (payee, note, both references, times with their zone, the timeline) axe-clean; 50 movements on a phone kept under
 * 2,500 px; an admin's refused refund nowhere in the customer's history.
 */
import { randomUUID } from "node:crypto";
import { expect, test, type Page } from "@playwright/test";
import { apiTopup, axeViolations, makeAdmin, signUp, tabTo, userIdOf, walletState } from "./helpers";

const VIEWPORTS = [
  { label: "desktop", width: 1280, height: 800 },
  { label: "phone", width: 390, height: 844 },
] as const;

/** A payment through the API with the page's session (same origin, as the page's own script would send it). */
async function apiPayment(page: Page, body: Record<string, unknown>): Promise<number> {
  const response = await page.request.post("/api/v1/payments", {
    data: body,
    headers: { origin: new URL(page.url()).origin },
  });
  return response.status();
}

for (const viewport of VIEWPORTS) {
  test(`${viewport.label}: pay a payee with a note by keyboard, find it by search, read its receipt`, async ({
    browser,
  }, testInfo) => {
    // A sign-up, a top-up answered by the bank, a payment, a search and two axe runs: 90 s on a loaded machine.
    test.setTimeout(120_000);
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    try {
      await signUp(page);
      expect(await apiTopup(page, `history-${randomUUID().slice(0, 8)}`, 2500)).toBe(201);
      await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(2500);
      await page.goto("/wallet");

      // The pay form comes before the history: reachable without scrolling past it.
      const pay = page.getByTestId("pay-form");
      const payTop = await pay.evaluate((form) => form.getBoundingClientRect().top + window.scrollY);
      const historyTop = await page
        .locator("#history")
        .evaluate((section) => section.getBoundingClientRect().top + window.scrollY);
      expect(payTop).toBeLessThan(historyTop);

      // Keyboard only: the payee (typed; the merchants are offered as suggestions), the note, $5.00, Enter.
      await tabTo(page, pay.getByLabel("Pay to"));
      await page.keyboard.type("Corner Coffee");
      await page.keyboard.press("Tab");
      await expect(pay.getByLabel("Note (optional)")).toBeFocused();
      await page.keyboard.type("Two flat whites for the team");
      await tabTo(page, pay.getByLabel("$1.00"));
      await page.keyboard.press("ArrowRight");
      await expect(pay.getByLabel("$5.00")).toBeChecked();
      await page.keyboard.press("Enter");
      await expect(pay.getByTestId("result")).toHaveText("Paid $5.00.");
      await expect(page.getByTestId("balance")).toHaveText("$20.00");
      // No raw reference under the forms nor in the history's lines.
      // biome-ignore lint/performance/useDomNodeTextContent: the visible text is the point
      expect(await page.locator("main").innerText()).not.toContain("web:");

      // Search by the note, with the keyboard: the history keeps that one payment.
      await tabTo(page, page.getByRole("searchbox", { name: "Search" }));
      await page.keyboard.type("flat whites");
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/q=flat\+whites/);
      const lines = page.getByTestId("history").locator("li");
      await expect(lines).toHaveCount(1);
      await expect(lines.first()).toHaveAttribute("data-type", "payment");
      await expect(lines.first()).toContainText("Payment to Corner Coffee");
      await expect(lines.first()).toContainText("$5.00");
      await expect(lines.first()).toContainText("Succeeded");
      // One line on a phone: what, amount and status side by side.
      const lineBox = await lines.first().boundingBox();
      expect(lineBox?.height ?? 0).toBeLessThan(60);
      // Search by payee too, from the address.
      await page.goto("/wallet?q=corner%20coffee#history");
      await expect(lines).toHaveCount(1);
      await page.screenshot({ path: testInfo.outputPath(`history-search-${viewport.label}.png`), fullPage: true });

      // The line is a link to the movement's page: its receipt and timeline.
      await tabTo(page, lines.first().getByRole("link"));
      await page.keyboard.press("Enter");
      await expect(page).toHaveURL(/\/wallet\/movements\/PY-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
      await expect(page.getByRole("heading", { level: 1 })).toHaveText("Payment to Corner Coffee");
      await expect(page.getByTestId("receipt-payee")).toHaveText("Corner Coffee");
      await expect(page.getByTestId("receipt-note")).toHaveText("Two flat whites for the team");
      await expect(page.getByTestId("receipt-amount")).toContainText("$5.00");
      await expect(page.getByTestId("receipt-status")).toContainText("Succeeded");
      const reference = (await page.getByTestId("receipt-reference").textContent()) ?? "";
      expect(page.url()).toContain(reference);
      await expect(page.getByTestId("receipt-full-reference")).toHaveText(/^web:[0-9a-f-]{36}$/);
      // Times say their zone.
      await expect(page.getByTestId("receipt").locator("time").first()).toHaveText(/UTC|GMT|[A-Z]{3}/);
      await expect(page.getByTestId("timeline").locator("li")).toHaveCount(2);
      await expect(page.getByTestId("timeline")).toContainText("by your request");
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: testInfo.outputPath(`receipt-${viewport.label}.png`), fullPage: true });

      // The readable reference finds it as well, typed in lower case.
      await page.goto(`/wallet?q=${encodeURIComponent(reference.toLowerCase())}#history`);
      await expect(lines).toHaveCount(1);
      await expect(lines.first()).toContainText(reference);
      expect(await axeViolations(page)).toEqual([]);
      // Filters the API would refuse are said in words, with no list.
      await page.goto(`/wallet?q=${"x".repeat(200)}&from=2026-12-02&to=2026-12-01#history`);
      await expect(page.getByTestId("history-invalid")).toBeVisible();
      await expect(page.getByTestId("history")).toHaveCount(0);
    } finally {
      await context.close();
    }
  });
}

test("phone: a history of 50 movements, one line each, stays under 2,500 px tall", async ({ browser }, testInfo) => {
  // A sign-up, a top-up and 49 payments through the API: about a minute on a loaded machine.
  test.setTimeout(150_000);
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  try {
    await signUp(page);
    expect(await apiTopup(page, `history50-${randomUUID().slice(0, 8)}`, 10_000)).toBe(201);
    await expect.poll(async () => (await walletState(page)).balance, { timeout: 15_000 }).toBe(10_000);
    const payees = ["Corner Coffee", "City Books", "Metro Transit", "Green Grocer"];
    for (let i = 0; i < 49; i++) {
      const body = {
        orderId: `order-${randomUUID()}`,
        amount: 100 + i,
        payee: payees[i % payees.length],
        ...(i % 3 === 0 ? { note: `Receipt ${i} for the monthly office supplies and a long note` } : {}),
      };
      expect(await apiPayment(page, body)).toBe(201);
    }
    await page.goto("/wallet");
    const lines = page.getByTestId("history").locator("li");
    await expect(lines).toHaveCount(50);
    const heightPx = await page
      .locator("#history")
      .evaluate((section) => Math.round(section.getBoundingClientRect().height));
    testInfo.annotations.push({ type: "history height", description: `${heightPx} px for 50 movements at 390 px` });
    expect(heightPx).toBeLessThan(2500);
    // Every line is one line: no line taller than one line of text and a badge.
    const tallest = await lines.evaluateAll((items) =>
      Math.max(...items.map((item) => item.getBoundingClientRect().height)),
    );
    expect(tallest).toBeLessThan(60);
    await page.screenshot({ path: testInfo.outputPath("history-50-phone.png"), fullPage: true });
  } finally {
    await context.close();
  }
});

test("a refund an admin tried and the wallet refused is not in the customer's history", async ({
  browser,
}, testInfo) => {
  test.setTimeout(120_000);
  const customer = await browser.newPage();
  const admin = await browser.newPage();
  try {
    const email = await signUp(customer);
    const userId = await userIdOf(email);
    const topupRef = `refund-me-${randomUUID().slice(0, 8)}`;
    expect(await apiTopup(customer, topupRef, 1000)).toBe(201);
    await expect.poll(async () => (await walletState(customer)).balance, { timeout: 15_000 }).toBe(1000);

    const adminEmail = await signUp(admin);
    await makeAdmin(adminEmail);
    const refusedId = `refused-${randomUUID().slice(0, 8)}`;
    const refused = await admin.request.post(
      `/api/v1/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(topupRef)}/refunds`,
      { data: { refundId: refusedId, amount: 3000 }, headers: { origin: new URL(admin.url()).origin } },
    );
    expect(refused.status()).toBe(422);
    expect(((await refused.json()) as { code: string }).code).toBe("refund_exceeds_topup");

    await customer.goto("/wallet");
    const history = customer.getByTestId("history");
    await expect(history.locator('li[data-type="topup"]')).toHaveCount(1);
    await expect(history.locator('li[data-type="refund"]')).toHaveCount(0);
    await expect(history).not.toContainText("Refund");
    await customer.goto("/wallet?type=refund#history");
    await expect(customer.getByTestId("history-empty")).toBeVisible();
    // Nor in the API's statement.
    const statement = (await (await customer.request.get("/api/v1/entries")).json()) as {
      entries: { type: string; refId: string }[];
    };
    expect(statement.entries.map((line) => line.type)).toEqual(["topup"]);
    await customer.screenshot({ path: testInfo.outputPath("history-without-refused-refund.png"), fullPage: true });
  } finally {
    await customer.close();
    await admin.close();
  }
});

test("the history and the tokens page state their time zone once, and their times are in it", async ({ browser }) => {
  test.setTimeout(120_000);
  // A reader in New York: every time on these pages is New York's, and the pages say so by name.
  const context = await browser.newContext({ viewport: VIEWPORTS[1], timezoneId: "America/New_York" });
  const page = await context.newPage();
  try {
    await signUp(page);
    expect(await apiTopup(page, `zone-${randomUUID().slice(0, 8)}`, 700)).toBe(201);
    await page.goto("/wallet");
    const note = page.locator("#history").getByTestId("time-zone-note");
    await expect(note).toHaveText(/^Times are in your time zone, America\/New_York \((EST|EDT|GMT-5|GMT-4)\)\.$/);
    const time = page.getByTestId("history").locator("time").first();
    const iso = (await time.getAttribute("datetime")) ?? "";
    const newYork = new Intl.DateTimeFormat("en-US", {
      dateStyle: "medium",
      timeStyle: "short",
      timeZone: "America/New_York",
    }).format(new Date(iso));
    await expect(time).toHaveText(newYork);

    await page.goto("/settings/tokens");
    await expect(page.getByTestId("time-zone-note")).toHaveText(/America\/New_York/);
  } finally {
    await context.close();
  }
});
