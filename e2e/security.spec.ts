/**
 * The edge defences (contract section 9) in a real Chromium: every page works under the nonce-based
 * Content-Security-Policy (no violation reported, forms hydrate and run), a page on another port cannot frame the
 * wallet nor post its forms (C23 with a real browser and the real cookie), and the security settings revoke tokens when
 * asked.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test, type Page } from "@playwright/test";
import pg from "pg";
import { signUp } from "./helpers";

/** Makes the signed-up user an admin, directly in the test stack's database. */
async function asAdmin(email: string): Promise<void> {
  const { databaseUrl } = JSON.parse(process.env.TEST_STACK ?? "{}") as { databaseUrl?: string };
  const client = new pg.Client({ connectionString: databaseUrl, application_name: "e2e-security" });
  await client.connect();
  try {
    await client.query(`UPDATE "user" SET role = 'admin' WHERE email = $1`, [email]);
  } finally {
    await client.end();
  }
}

/** Collects the page's CSP violations (Chromium reports each as a console error and a securitypolicyviolation). */
function watchCsp(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  return violations;
}

/** A tiny server on another port of 127.0.0.1 (same site, other origin) that serves `html`. */
async function otherOrigin(html: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

test("every page renders and runs its scripts under the CSP, with no violation reported", async ({ page }) => {
  const violations = watchCsp(page);
  await signUp(page);
  for (const path of ["/wallet", "/settings/tokens", "/settings/security"]) {
    const response = await page.goto(path);
    const policy = response?.headers()["content-security-policy"] ?? "";
    expect(policy).toMatch(/script-src 'nonce-[^']+' 'strict-dynamic'/);
    expect(policy).toContain("frame-ancestors 'none'");
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  }
  // Client components hydrated: the token form's answer is rendered by React from the action's result.
  await page.goto("/settings/tokens");
  await page.getByLabel("Name").fill("e2e under csp");
  await page.getByLabel("Expires").selectOption("30");
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.locator(".token-value")).toHaveText(/^wlt_/);
  await expect(page.getByRole("table", { name: "Active tokens" })).toContainText("e2e under csp");
  expect(violations).toEqual([]);
});

test("a page on another port cannot frame the wallet", async ({ page }) => {
  await signUp(page);
  const violations = watchCsp(page);
  const walletUrl = new URL("/wallet", page.url()).toString();
  const attacker = await otherOrigin(`<!doctype html><iframe id="victim" src="${walletUrl}"></iframe>`);
  try {
    const framed = page.waitForResponse((response) => response.url() === walletUrl);
    await page.goto(attacker.url);
    expect((await framed).headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    // Chromium refuses to display it and says why (the same message for X-Frame-Options would name that header).
    await expect.poll(() => violations.join("\n")).toContain("frame-ancestors 'none'");
    await expect(page.frameLocator("#victim").getByRole("button", { name: /top up|pay/i })).toHaveCount(0);
  } finally {
    attacker.server.close();
  }
});

test("C23: an auto-submitted text/plain form on another port cannot use the signed-in admin's cookie", async ({
  page,
  baseURL,
}) => {
  const email = await signUp(page);
  // An admin: without the origin check the request would run the reconciler (a user would get 403 anyway).
  await asAdmin(email);
  const target = new URL("/api/v1/admin/reconcile", baseURL).toString();
  const attacker = await otherOrigin(`<!doctype html>
<form id="f" method="post" enctype="text/plain" action="${target}"><input name="x" value="y"></form>
<script>document.getElementById("f").submit()</script>`);
  try {
    const answer = page.waitForResponse((response) => response.url() === target);
    await page.goto(attacker.url);
    const response = await answer;
    // The cookie was sent (same site), so only the origin check stands between the form and the endpoint.
    expect((await response.request().allHeaders()).cookie).toContain("session_token");
    expect(response.status()).toBe(403);
    expect(await response.json()).toMatchObject({ code: "forbidden" });
  } finally {
    attacker.server.close();
  }
});

test("changing the password without touching 'keep my API tokens' revokes them; signing out everywhere ends the session", async ({
  page,
}) => {
  await signUp(page);
  await page.goto("/settings/tokens");
  await page.getByLabel("Name").fill("to be revoked");
  await page.getByRole("button", { name: "Create token" }).click();
  const token = (await page.locator(".token-value").textContent()) ?? "";
  expect((await page.request.get("/api/v1/wallet", { headers: { authorization: `Bearer ${token}` } })).status()).toBe(
    200,
  );

  await page.goto("/settings/security");
  await page.getByLabel("Current password").fill("correct-horse-battery");
  await page.getByLabel("New password").fill("a brand new password 1");
  // Both boxes start unticked (contract section 9): a password change signs the tokens out unless the user keeps them.
  // Soft, so that on a page whose box starts ticked the token's 401 below fails too.
  const keepBoxes = page.getByRole("checkbox", { name: "Keep my API tokens working" });
  await expect(keepBoxes).toHaveCount(2);
  for (const box of await keepBoxes.all()) await expect.soft(box).not.toBeChecked();
  await page.getByRole("button", { name: "Change password" }).click();
  await expect(page.getByRole("status")).toContainText("Password changed.");
  expect((await page.request.get("/api/v1/wallet", { headers: { authorization: `Bearer ${token}` } })).status()).toBe(
    401,
  );
  await expect(page.getByRole("status")).toContainText("API tokens were revoked");
  // This browser keeps a fresh session after the change.
  expect((await page.request.get("/api/v1/wallet")).status()).toBe(200);

  await page.getByRole("button", { name: "Sign out everywhere" }).click();
  await expect(page).toHaveURL(/\/sign-in\?signed-out=1$/);
  await expect(page.getByTestId("signed-out")).toHaveText("You are signed out.");
  expect((await page.request.get("/api/v1/wallet")).status()).toBe(401);
});
