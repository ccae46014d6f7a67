/**
 * The pages people see, with data on them, for the layout and accessibility checks: a user with top-ups (one
 * succeeded, one declined, one processing), a refused and a succeeded payment, a reward, an active and a revoked
 * token, a withdrawal and a transfer to the admin; the same user as an admin for the admin pages. `visitPages` signs in once and visits each page.
 */
import { expect, type Browser, type BrowserContext, type Page } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiPayout, apiTopup, apiTransfer, makeAdmin, signUp, userIdOf } from "./helpers";

export interface PageVisit {
  /** A short name for artefacts ("wallet", "admin-timeline"). */
  readonly name: string;
  /** Signed in, signed in as admin, or signed out. */
  readonly as: "user" | "admin" | "visitor";
  /** Opens the page (and waits until it is drawn). */
  readonly open: (page: Page) => Promise<void>;
}

/** Data shared by the visits of one test run. */
export interface SeededUser {
  readonly email: string;
  readonly userId: string;
  /** A top-up of this user, for the admin timeline page. */
  readonly refId: string;
  /** Another account, an admin. */
  readonly adminEmail: string;
  /** The address of one of the user's movements (a payment to a payee, with a note): its receipt page. */
  readonly movementPath: string;
  /** A top-up of this user whose webhook the bank delivers three times (`sbx-dup-`), for the webhook table. */
  readonly webhookRefId: string;
  /** A withdrawal of this user, for the admin payout timeline. */
  readonly payoutRefId: string;
  /** A transfer of this user to the admin, for the admin transfers page. */
  readonly transferRefId: string;
}

/** A top-up reference of 128 characters, the longest the API accepts. */
function longestReference(): string {
  return `long-${randomUUID()}-${"r".repeat(86)}`;
}

/** Signs up a user and gives them something of everything the pages show; signs up an admin too. */
async function seedUser(page: Page): Promise<SeededUser> {
  const adminEmail = await signUp(page);
  await makeAdmin(adminEmail);
  // The longest reference the API accepts (128 characters), in the admin's own wallet: the admin list, which shows
  // every user's top-ups, may not grow wider for it.
  expect(await apiTopup(page, longestReference(), 700)).toBe(201);
  await page.context().clearCookies();
  const email = await signUp(page);
  const userId = await userIdOf(email);
  const topups = page.getByTestId("topup-form");
  await topups.getByLabel("$25.00").check();
  await topups.getByRole("button", { name: "Top up" }).click();
  await expect(topups.getByTestId("result")).toBeVisible();
  expect(await apiTopup(page, `sbx-decline-${randomUUID().slice(0, 8)}`, 1234)).toBe(201);
  // The user's wallet pages may not grow wider for it either. Left out only when the run writes the README's
  // screenshots (DOCS_SCREENSHOTS=1), whose wallet should read like a person's.
  if (process.env.DOCS_SCREENSHOTS !== "1") expect(await apiTopup(page, longestReference(), 700)).toBe(201);
  const refId = `sbx-nohook-${randomUUID().slice(0, 8)}`;
  expect(await apiTopup(page, refId, 5000)).toBe(201);
  const webhookRefId = `sbx-dup-${randomUUID().slice(0, 8)}`;
  expect(await apiTopup(page, webhookRefId, 2500)).toBe(201);
  await page.goto("/wallet");
  const pay = page.getByTestId("pay-form");
  // The longest payee and note the form takes: the history's line and the receipt may not grow wider for them.
  await pay.getByLabel("Pay to").fill(`Order 4471 at ${"The Long Name Bakery ".repeat(4)}`.slice(0, 80).trimEnd());
  await pay.getByLabel("Note (optional)").fill(`Birthday cake ${"and candles ".repeat(12)}`.slice(0, 140).trimEnd());
  await pay.getByLabel("Other amount").fill("99.99");
  await pay.getByRole("button", { name: "Pay" }).click();
  await expect(pay.getByTestId("result")).toBeVisible();
  const movementPath = await page
    .getByTestId("history")
    .locator('li[data-type="payment"] a')
    .first()
    .getAttribute("href");
  if (!movementPath) throw new Error("the payment has no link to its page");
  await page.locator('[data-ad-id="ad-a"]').getByRole("button").click();
  await expect(page.getByTestId("reward-result")).toBeVisible();
  await page.goto("/settings/tokens");
  for (const name of ["laptop script", "old script"]) {
    await page.getByLabel("Name").fill(name);
    await page.getByRole("button", { name: "Create token" }).click();
    await expect(page.locator(".token-value")).toBeVisible();
  }
  await page.getByRole("button", { name: "Revoke token old script" }).click();
  await expect(page.getByRole("table", { name: "Revoked and expired tokens" })).toBeVisible();
  // Money out and between people: a withdrawal (its admin pages) and a transfer to the admin (both statements).
  const payoutRefId = `po-${randomUUID().slice(0, 8)}`;
  expect(await apiPayout(page, payoutRefId, 500)).toBe(201);
  const transferRefId = `tr-${randomUUID().slice(0, 8)}`;
  expect(await apiTransfer(page, transferRefId, adminEmail, 300)).toBe(201);
  return { email, userId, refId, adminEmail, movementPath, webhookRefId, payoutRefId, transferRefId };
}

/** Every page of the app people use, in the order a visitor meets them. */
function pageVisits(user: SeededUser): PageVisit[] {
  const heading = (page: Page) => expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  const go = (path: string) => async (page: Page) => {
    await page.goto(path);
    await heading(page);
  };
  return [
    { name: "sign-in", as: "visitor", open: go("/sign-in") },
    { name: "sign-up", as: "visitor", open: go("/sign-up") },
    { name: "forgot-password", as: "visitor", open: go("/forgot-password") },
    // A reset link's page with a token (the form) and without one (the "expired or used" answer).
    { name: "reset-password", as: "visitor", open: go("/reset-password?token=AbCdEfGhIjKlMnOpQrStUvWx") },
    { name: "reset-password-no-token", as: "visitor", open: go("/reset-password") },
    {
      name: "wallet",
      as: "user",
      open: async (page) => {
        await go("/wallet")(page);
        await expect(page.getByTestId("history")).toBeVisible();
        await expect(page.getByTestId("live")).toHaveAttribute("data-live", /push|polling/);
      },
    },
    {
      name: "movement",
      as: "user",
      open: async (page) => {
        await go(user.movementPath)(page);
        await expect(page.getByTestId("timeline")).toBeVisible();
      },
    },
    { name: "wallet-history-filtered", as: "user", open: go("/wallet?type=payment&q=bakery#history") },
    {
      name: "statement",
      as: "user",
      open: async (page) => {
        await go("/wallet/statement")(page);
        await expect(page.getByTestId("statement")).toBeVisible();
      },
    },
    { name: "tokens", as: "user", open: go("/settings/tokens") },
    { name: "security", as: "user", open: go("/settings/security") },
    { name: "forbidden", as: "user", open: go("/admin") },
    {
      name: "not-found",
      as: "user",
      open: async (page) => {
        const response = await page.goto("/no-such-page");
        expect(response?.status()).toBe(404);
        await expect(page.getByRole("heading", { level: 1 })).toHaveText("404 — page not found");
      },
    },
    {
      name: "admin",
      as: "admin",
      open: async (page) => {
        await go("/admin")(page);
        await expect(page.getByTestId("chart-status").locator("canvas")).toBeVisible();
        await expect(page.getByTestId("audit")).toBeVisible({ timeout: 20_000 });
      },
    },
    {
      name: "admin-numbers",
      as: "admin",
      open: async (page) => {
        await go("/admin")(page);
        for (const summary of await page.getByText("Show the numbers").all()) await summary.click();
        await expect(page.getByRole("region", { name: "Top-ups per hour, as numbers" })).toBeVisible();
        await expect(page.getByRole("region", { name: "Claim to final state, as numbers" })).toBeVisible();
      },
    },
    {
      name: "admin-user-filter",
      as: "admin",
      open: go(`/admin?user=${encodeURIComponent(user.email)}`),
    },
    {
      name: "admin-timeline",
      as: "admin",
      open: go(`/admin/topups/${encodeURIComponent(user.userId)}/${encodeURIComponent(user.refId)}`),
    },
    { name: "admin-timeline-webhooks", as: "admin", open: openWebhookTimeline(user) },
    {
      name: "admin-refund-confirm",
      as: "admin",
      open: async (page) => {
        await openWebhookTimeline(user)(page);
        const form = page.getByTestId("refund-form");
        await form.getByLabel(/Amount to refund/).fill("5.00");
        await form.getByRole("button", { name: "Review refund" }).click();
        await expect(form.getByTestId("refund-confirm")).toBeVisible();
      },
    },
    {
      name: "admin-payouts",
      as: "admin",
      open: async (page) => {
        await go("/admin/payouts")(page);
        await expect(page.locator(`[data-ref="${user.payoutRefId}"]`).first()).toBeVisible();
      },
    },
    {
      name: "admin-payout-timeline",
      as: "admin",
      open: go(`/admin/payouts/${encodeURIComponent(user.userId)}/${encodeURIComponent(user.payoutRefId)}`),
    },
    {
      name: "admin-transfers",
      as: "admin",
      open: async (page) => {
        await go("/admin/transfers")(page);
        await expect(page.locator(`[data-ref="${user.transferRefId}"]`).first()).toBeVisible();
      },
    },
    {
      name: "admin-books",
      as: "admin",
      open: async (page) => {
        await go("/admin/books")(page);
        await expect(page.getByTestId("trial-balance")).toBeVisible();
        await expect(page.getByTestId("books-days")).toBeVisible();
      },
    },
    {
      name: "admin-books-account",
      as: "admin",
      open: async (page) => {
        await go("/admin/books/bank_clearing")(page);
        await expect(page.getByTestId("postings").locator("tbody tr").first()).toBeVisible();
      },
    },
    {
      name: "error",
      as: "user",
      open: async (page) => {
        const response = await page.goto("/error-drill");
        expect(response?.status()).toBe(500);
        await expect(page.getByRole("heading", { level: 1 })).toHaveText("Something went wrong");
      },
    },
    { name: "sign-in-password-changed", as: "visitor", open: go("/sign-in?ended=password-changed") },
    {
      name: "api-docs-operation",
      as: "visitor",
      open: async (page) => {
        await page.goto("/docs/api");
        // An operation with a request body, parameters and responses: the widest Swagger UI draws.
        const operation = page.locator('[data-path="/api/v1/topups"]').first();
        await operation.click({ timeout: 20_000 });
        await expect(page.locator(".opblock.is-open .responses-table").first()).toBeVisible();
      },
    },
  ];
}

/** Opens the admin timeline of the seeded `sbx-dup-` top-up once its webhook rows are there (the bank sends them). */
function openWebhookTimeline(user: SeededUser): (page: Page) => Promise<void> {
  return async (page) => {
    const path = `/admin/topups/${encodeURIComponent(user.userId)}/${encodeURIComponent(user.webhookRefId)}`;
    await expect(async () => {
      await page.goto(path);
      await expect(page.getByTestId("webhooks").locator("tbody tr").first()).toBeVisible({ timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
  };
}

/** A context signed in as the seeded user or the admin (by the sign-in page), or signed out. */
async function contextFor(
  browser: Browser,
  as: PageVisit["as"],
  user: SeededUser,
  viewport: { width: number; height: number },
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport });
  if (as === "visitor") return context;
  const page = await context.newPage();
  await page.goto("/sign-in");
  await page.getByLabel("Email").fill(as === "admin" ? user.adminEmail : user.email);
  await page.getByLabel("Password").fill("correct-horse-battery");
  await page.getByRole("button", { name: "Sign in" }).click();
  // Verifying the password (argon2id) takes seconds on a loaded 2-core machine. An admin lands on the admin page.
  await expect(page).toHaveURL(as === "admin" ? /\/admin$/ : /\/wallet$/, { timeout: 20_000 });
  await page.close();
  return context;
}

/**
 * Opens every page of {@link pageVisits} at `viewport`, each in a new tab of a context signed in as the visit needs
 * (one context per role, signed in once), calls `check` on it and closes it; closes the contexts at the end.
 */
export async function forEveryPage(
  browser: Browser,
  user: SeededUser,
  viewport: { width: number; height: number },
  check: (visit: PageVisit, tab: Page) => Promise<void>,
): Promise<void> {
  const contexts = new Map<PageVisit["as"], BrowserContext>();
  try {
    for (const visit of pageVisits(user)) {
      let context = contexts.get(visit.as);
      if (!context) {
        context = await contextFor(browser, visit.as, user, viewport);
        contexts.set(visit.as, context);
      }
      const tab = await context.newPage();
      await visit.open(tab);
      await check(visit, tab);
      await tab.close();
    }
  } finally {
    for (const context of contexts.values()) await context.close();
  }
}

/** {@link seedUser} in a page of its own (for a `beforeAll`, which has no page fixture). */
export async function seedUserIn(browser: Browser): Promise<SeededUser> {
  const page = await browser.newPage();
  try {
    return await seedUser(page);
  } finally {
    await page.close();
  }
}
