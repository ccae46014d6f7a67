/**
 * Case C21 (contract section 6): a reward is one per ad per user per local day, from the page as from the API. The
 * page offers enough ads for the daily cap to be reached (10 with the contract's 5 per ad and cap 50).
 */
import { expect, test } from "@playwright/test";
import { signUp, walletState } from "./helpers";

test("C21: Watch ad A twice gives one credit and says 'already credited today'; the API replays it; ten ads reach the cap", async ({
  page,
}, testInfo) => {
  test.setTimeout(90_000);
  await signUp(page);
  const adA = page.locator('[data-testid="reward-ad-form"][data-ad-id="ad-a"]');
  await adA.getByRole("button", { name: "Watch ad A" }).click();
  await expect(adA.getByTestId("reward-result")).toHaveText("+$0.05 credited for ad A.");
  await expect(page.getByTestId("rewards-earned")).toHaveText("$0.05");

  // The second click on the same day is the same operation: it replays and moves nothing.
  await adA.getByRole("button", { name: "Watch ad A" }).click();
  await expect(adA.getByTestId("reward-result")).toContainText("Already credited today");
  await expect(page.getByTestId("rewards-earned")).toHaveText("$0.05");
  expect((await walletState(page)).balance).toBe(5);

  // The API is the same door: ad-a on the same day replays the page's credit.
  const viaApi = await page.request.post("/api/v1/rewards", {
    data: { adId: "ad-a" },
    headers: { origin: new URL(page.url()).origin },
  });
  expect(viaApi.status()).toBe(201);
  expect(viaApi.headers()["idempotent-replayed"]).toBe("true");
  expect((await walletState(page)).balance).toBe(5);

  // A reload still says ad A was credited today.
  await page.reload();
  await expect(adA).toHaveAttribute("data-credited", "true");
  await expect(adA).toContainText("Credited today");

  // The other nine ads reach the cap of $0.50.
  const ads = page.getByTestId("reward-ad-form");
  await expect(ads).toHaveCount(10);
  for (const letter of ["B", "C", "D", "E", "F", "G", "H", "I", "J"]) {
    const ad = page.locator(`[data-testid="reward-ad-form"][data-ad-id="ad-${letter.toLowerCase()}"]`);
    await ad.getByRole("button", { name: `Watch ad ${letter}` }).click();
    await expect(ad.getByTestId("reward-result")).toHaveText(`+$0.05 credited for ad ${letter}.`);
  }
  await expect(page.getByTestId("rewards-earned")).toHaveText("$0.50");
  await expect(page.getByTestId("reward-cap-reached")).toContainText("Daily limit reached");
  expect((await walletState(page)).balance).toBe(50);
  await page.screenshot({ path: testInfo.outputPath("rewards-cap.png"), fullPage: true });
});
