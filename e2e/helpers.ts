import { expect, type Page } from "@playwright/test";
import { randomUUID } from "node:crypto";
import type { ResponseBody } from "../scripts/lib/api-types";

/** Signs up a fresh user through the real sign-up page and lands on the wallet. Returns the email. */
export async function signUp(page: Page): Promise<string> {
  const email = `e2e-${randomUUID().slice(0, 12)}@example.test`;
  await page.goto("/sign-up");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill("correct-horse-battery");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page).toHaveURL(/\/wallet$/);
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
