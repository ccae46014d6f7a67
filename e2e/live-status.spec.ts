/**
 * Live status on the wallet page (docs/decisions/025-live-status-push.md). A top-up made with the sandbox's
 * `sbx-nohook-` switch stays `processing` until the test delivers the bank's signed `charge.succeeded`, so the moment
 * its state changes is the test's to choose:
 *
 * - push: the page holds one event stream and makes no other request while nothing changes (no polling), then the
 *   row, the balance and the form's answer change without a reload once the webhook lands;
 * - fallback: with the event stream refused, the page polls, and the same change still shows without a reload.
 */
import { expect, type Page, test } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { apiTopup, deliverChargeSucceeded, signUp, userIdOf } from "./helpers";

/** The fallback's polling interval (app/wallet/live-updates.tsx POLL_INTERVAL_MS). */
const POLL_INTERVAL_MS = 3_000;

/** Marks the document, so a reload (a new document) is detected: the mark would be gone. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => {
    (window as unknown as { liveStatusMark: string }).liveStatusMark = "same document";
  });
}

async function stillSameDocument(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { liveStatusMark?: string }).liveStatusMark === "same document");
}

/**
 * Every request the page makes from now on, but the event stream's (reconnects included) and Next.js's link
 * prefetches (it fetches the pages behind the header's links ahead of a click; that is not asking for news).
 */
function recordRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/api/v1/events") return;
    if (request.headers()["next-router-prefetch"]) return;
    seen.push(`${request.method()} ${request.url()}`);
  });
  return seen;
}

test("push: a top-up's state changes on the page without a reload and without any polling request", async ({
  page,
}, testInfo) => {
  test.setTimeout(60_000);
  const email = await signUp(page);
  const userId = await userIdOf(email);
  const refId = `sbx-nohook-live-${randomUUID().slice(0, 8)}`;
  expect(await apiTopup(page, refId, 1500)).toBe(201);

  await page.goto("/wallet");
  const row = page.getByTestId("history").locator(`li[data-ref="${refId}"]`);
  await expect(row).toHaveAttribute("data-status", "processing");
  // The push is live once the server listens, and the refresh that follows every `ready` is done.
  const live = page.getByTestId("live");
  await expect(live).toHaveAttribute("data-live", "push", { timeout: 15_000 });
  await expect(live).toHaveAttribute("data-refreshing", "false");
  await markDocument(page);

  // Nothing changes for two polling intervals: a page that polled would have asked at least twice.
  const requests = recordRequests(page);
  await page.waitForTimeout(2 * POLL_INTERVAL_MS + 500);
  expect(requests, "requests made while nothing changed").toEqual([]);

  await deliverChargeSucceeded(page, userId, refId, 1500);
  await expect(row).toHaveAttribute("data-status", "succeeded", { timeout: 10_000 });
  await expect(page.getByTestId("balance")).toHaveText("$15.00");
  await expect(live).toHaveAttribute("data-live", "push");
  expect(await stillSameDocument(page), "the page was reloaded").toBe(true);
  // The page asked for its new data once it heard the announcement.
  expect(requests.some((line) => line.includes("/wallet"))).toBe(true);
  await page.screenshot({ path: testInfo.outputPath("live-push.png"), fullPage: true });
});

test("fallback: with the event stream refused, the page polls and the state still changes without a reload", async ({
  page,
}, testInfo) => {
  test.setTimeout(60_000);
  // The stream never opens (a proxy that refuses or buffers it): the browser sees a network error each time.
  await page.route("**/api/v1/events", (route) => route.abort());
  const email = await signUp(page);
  const userId = await userIdOf(email);
  const refId = `sbx-nohook-poll-${randomUUID().slice(0, 8)}`;
  expect(await apiTopup(page, refId, 2000)).toBe(201);

  await page.goto("/wallet");
  const row = page.getByTestId("history").locator(`li[data-ref="${refId}"]`);
  await expect(row).toHaveAttribute("data-status", "processing");
  const live = page.getByTestId("live");
  await expect(live).toHaveAttribute("data-live", "polling");
  await markDocument(page);
  const requests = recordRequests(page);

  await deliverChargeSucceeded(page, userId, refId, 2000);
  await expect(row).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
  await expect(page.getByTestId("balance")).toHaveText("$20.00");
  expect(await stillSameDocument(page), "the page was reloaded").toBe(true);
  // It got there by polling: the page asked for its data again on its own.
  expect(requests.some((line) => line.includes("/wallet"))).toBe(true);
  // Nothing unfinished is left: the polling stops.
  await expect(live).not.toHaveAttribute("data-live", "polling");
  await page.screenshot({ path: testInfo.outputPath("live-fallback.png"), fullPage: true });
});
