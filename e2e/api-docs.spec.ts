/**
 * /docs/api: the OpenAPI document rendered by Swagger UI, bundled from npm into the app. It must
 * render the document's operations with no request to any host but the app, and with no Content-Security-Policy
 * violation (the app's CSP applies to the viewer like to every page).
 */
import { expect, test } from "@playwright/test";

test("/docs/api renders the API reference with no network request outside the app", async ({ page }, testInfo) => {
  const origin = new URL(testInfo.project.use.baseURL ?? "http://127.0.0.1").origin;
  const outside: string[] = [];
  page.on("request", (request) => {
    const url = request.url();
    if (url.startsWith("data:") || url.startsWith("blob:")) return;
    if (new URL(url).origin !== origin) outside.push(url);
  });
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to (load|execute|apply)/i.test(message.text()))
      violations.push(message.text());
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(`Refused to load: CSP ${event.violatedDirective} ${event.blockedURI}`);
    });
  });

  const documentLoaded = page.waitForResponse((response) => response.url().endsWith("/api/v1/openapi.json"));
  await page.goto("/docs/api");
  expect((await documentLoaded).status()).toBe(200);
  const reference = page.getByTestId("api-reference");
  await expect(reference.locator(".info .title")).toContainText("Exactly-once wallet API", { timeout: 20_000 });
  // Operations of every tag are listed, with their paths.
  for (const path of ["/api/v1/topups", "/api/v1/entries", "/api/v1/bank/webhook", "/api/v1/metrics"])
    await expect(reference.locator(`[data-path="${path}"]`).first()).toBeVisible();
  // The security schemes are offered.
  await expect(reference.getByRole("button", { name: /Authorize/ })).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("api-docs.png"), fullPage: false });

  expect(outside).toEqual([]);
  expect(violations).toEqual([]);
});
