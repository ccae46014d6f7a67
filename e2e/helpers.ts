import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";
import { createHmac, randomUUID } from "node:crypto";
import pg from "pg";
import type { ResponseBody } from "../scripts/lib/api-types";
import { jargonIn } from "./jargon";

/** Signs up a fresh user through the real sign-up page and lands on the wallet. Returns the email. */
export async function signUp(page: Page): Promise<string> {
  const email = `e2e-${randomUUID().slice(0, 12)}@example.test`;
  await page.goto("/sign-up");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct-horse-battery");
  await page.getByRole("button", { name: "Create account" }).click();
  // Hashing the password (argon2id) and creating the account take seconds on a loaded 2-core machine.
  await expect(page).toHaveURL(/\/wallet$/, { timeout: 20_000 });
  return email;
}

/** The signed-in user's balance (minor units) and top-ups, through the API with the page's session cookie. */
export async function walletState(
  page: Page,
): Promise<{ balance: number; topups: ResponseBody<"/api/v1/topups", "get", 200>["topups"] }> {
  const wallet = (await (await page.request.get("/api/v1/wallet")).json()) as ResponseBody<
    "/api/v1/wallet",
    "get",
    200
  >;
  const topups = (await (await page.request.get("/api/v1/topups")).json()) as ResponseBody<
    "/api/v1/topups",
    "get",
    200
  >;
  return { balance: wallet.balance, topups: topups.topups };
}

/** The test stack's addresses and webhook secret (TEST_STACK, set by global setup). */
export function stackInfo(): { databaseUrl: string; bankUrl: string; webhookSecrets: string } {
  const info = JSON.parse(process.env.TEST_STACK ?? "{}") as {
    databaseUrl?: string;
    bankUrl?: string;
    webhookSecrets?: string;
  };
  if (!info.databaseUrl || !info.bankUrl || !info.webhookSecrets)
    throw new Error("TEST_STACK has no databaseUrl/bankUrl/webhookSecrets (run through playwright's global setup)");
  return { databaseUrl: info.databaseUrl, bankUrl: info.bankUrl, webhookSecrets: info.webhookSecrets };
}

/** Runs `work` on a fresh connection to the test stack's database (test setup and checks only). */
export async function withDb<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: stackInfo().databaseUrl, application_name: "e2e" });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The id of the user with `email`. */
export async function userIdOf(email: string): Promise<string> {
  return withDb(
    async (db) => (await db.query<{ id: string }>('SELECT id FROM "user" WHERE email = $1', [email])).rows[0]!.id,
  );
}

/** Makes the user an admin (test setup, by SQL). */
export async function makeAdmin(email: string): Promise<void> {
  await withDb((db) => db.query(`UPDATE "user" SET role = 'admin' WHERE email = $1`, [email]));
}

/**
 * Starts a top-up through the API with the page's session, as the page's own script would (same origin). Returns
 * the response's status.
 */
export async function apiTopup(page: Page, refId: string, amountMinor: number): Promise<number> {
  const response = await page.request.post("/api/v1/topups", {
    data: { refId, amount: amountMinor },
    headers: { origin: new URL(page.url()).origin },
  });
  return response.status();
}

/** A valid sandbox account number (10 digits, Luhn): docs/bank-sandbox.md, Payouts. */
export const SANDBOX_DESTINATION = "4000000002";

/** Withdraws through the API with the page's session, as the wallet's own form would. Returns the status. */
export async function apiPayout(page: Page, refId: string, amountMinor: number): Promise<number> {
  const response = await page.request.post("/api/v1/payouts", {
    data: { refId, amount: amountMinor, destination: SANDBOX_DESTINATION },
    headers: { origin: new URL(page.url()).origin },
  });
  return response.status();
}

/** Sends money to `to` (an account's email) through the API with the page's session. Returns the status. */
export async function apiTransfer(page: Page, refId: string, to: string, amountMinor: number): Promise<number> {
  const response = await page.request.post("/api/v1/transfers", {
    data: { refId, to, amount: amountMinor, note: "for the flowers" },
    headers: { origin: new URL(page.url()).origin },
  });
  return response.status();
}

/**
 * Delivers the bank's `charge.succeeded` for the user's top-up `refId` as the bank would (signed with the stack's
 * secret): for `sbx-nohook-` top-ups, whose bank sends no webhook, so the test decides when the answer lands.
 */
export async function deliverChargeSucceeded(page: Page, userId: string, refId: string, amountMinor: number) {
  const merchantRef = `topup:${userId}:${refId}`;
  const { bankUrl, webhookSecrets } = stackInfo();
  let chargeId = "";
  await expect
    .poll(
      async () => {
        const response = await page.request.get(`${bankUrl}/charges?${new URLSearchParams({ merchantRef })}`);
        if (!response.ok()) return `HTTP ${response.status()}`;
        const charge = (await response.json()) as { id: string; status: string };
        chargeId = charge.id;
        return charge.status;
      },
      { timeout: 10_000, intervals: [100] },
    )
    .toBe("succeeded");
  const body = JSON.stringify({
    id: `evt_e2e_${randomUUID()}`,
    type: "charge.succeeded",
    data: { chargeId, merchantRef, amount: amountMinor, currency: "USD" },
  });
  const nowSeconds = Math.floor(Date.now() / 1000);
  const mac = createHmac("sha256", webhookSecrets.split(",")[0]!).update(`${nowSeconds}.${body}`).digest("hex");
  const response = await page.request.post("/api/v1/bank/webhook", {
    data: body,
    headers: { "content-type": "application/json", "bank-signature": `t=${nowSeconds},v1=${mac}` },
  });
  expect(response.status()).toBe(200);
}

/** The jargon words found in the page's visible text (empty when none; e2e/jargon.ts). */
export async function jargonOn(page: Page): Promise<string[]> {
  // innerText, not textContent: what people see (closed <details> and hidden elements are left out).
  // biome-ignore lint/performance/useDomNodeTextContent: the visible text is the point
  return jargonIn(await page.locator("body").innerText());
}

/** Presses Tab until `target` has the focus (at most 80 presses): how the keyboard-only tests reach a control. */
export async function tabTo(page: Page, target: ReturnType<Page["locator"]>): Promise<void> {
  for (let presses = 0; presses < 80; presses++) {
    if (await target.evaluate((element) => element === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error("Tab never reached the target");
}

/** axe-core's serious and critical findings on the page (WCAG 2.1 A and AA), one line each. */
export async function axeViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`);
}
