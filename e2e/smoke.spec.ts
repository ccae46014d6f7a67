import { expect, test } from "@playwright/test";

test("the sign-in page loads and has a heading", async ({ page }) => {
  const response = await page.goto("/sign-in");
  expect(response?.status()).toBeLessThan(400);
  await expect(page.getByRole("heading").first()).toBeVisible();
});

test("an address no page answers gets the app's 404 page, with the way back to the wallet", async ({ page }) => {
  // Next's default would say "This page could not be found." under a bare "404" heading, without this link.
  const response = await page.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("404 — page not found");
  await expect(page.getByRole("link", { name: "Go to your wallet" })).toHaveAttribute("href", "/wallet");
});
