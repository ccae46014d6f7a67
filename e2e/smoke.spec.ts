import { expect, test } from "@playwright/test";

test("the sign-in page loads and has a heading", async ({ page }) => {
  const response = await page.goto("/sign-in");
  expect(response?.status()).toBeLessThan(400);
  await expect(page.getByRole("heading").first()).toBeVisible();
});
