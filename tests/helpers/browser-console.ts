/**
 * What a developer's browser console shows on pages of a running app: Chromium (Debian's, docs/development.md
 * note 5) opens each page, and every console error, uncaught page error and Content-Security-Policy violation is
 * collected as one line. For tests that run the app themselves (tests/http/dev.test.ts runs `npm run dev`), outside
 * Playwright's own runner.
 */
import { chromium } from "@playwright/test";

/** Launch arguments of note 5: root in a container, no GPU, small /dev/shm, nothing phoning home. */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

/** The marker of a violation in the collected lines (the page reports each through console.error). */
export const CSP_VIOLATION = "CSP violation:";

export interface ConsoleVisit {
  /** The app's origin, e.g. `http://127.0.0.1:3000`. */
  origin: string;
  /** Paths opened one after the other in one page, e.g. `["/sign-in", "/wallet"]`. */
  paths: string[];
  /** A `Cookie` header value (`name=value; ...`) set on the origin before the first page, e.g. a session. */
  cookie?: string;
  /**
   * Bound for each page: its load, and the first message on the hot-reload websocket of `next dev`
   * (`/_next/hmr`), which the client opens once its code runs; a page that never gets there fails the visit.
   */
  timeoutMs: number;
}

export interface ConsoleReport {
  /** Console errors, page errors and CSP violations (`CSP violation: <directive> <blocked URI>`), in order. */
  problems: string[];
  /** The response status of each path, in order. */
  statuses: number[];
  /** The hot-reload websocket's URL on each page, in order. */
  hotReloadSockets: string[];
}

/**
 * Opens `visit.paths` of `visit.origin` in Chromium, each until it has loaded and `next dev`'s hot-reload websocket
 * has received its first message (React has run by then: the violations of its development build are reported), and
 * returns what the console showed. Only for pages served by `next dev` (a production build opens no such socket).
 * Throws when Chromium cannot start or a page misses `visit.timeoutMs`; always closes the browser.
 */
export async function visitAndCollectConsole(visit: ConsoleVisit): Promise<ConsoleReport> {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext();
    if (visit.cookie) {
      const cookies = visit.cookie.split("; ").map((pair) => {
        const split = pair.indexOf("=");
        return { name: pair.slice(0, split), value: pair.slice(split + 1), url: visit.origin };
      });
      await context.addCookies(cookies);
    }
    await context.addInitScript((marker: string) => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(`${marker} ${event.violatedDirective} ${event.blockedURI}`);
      });
    }, CSP_VIOLATION);
    const page = await context.newPage();
    const report: ConsoleReport = { problems: [], statuses: [], hotReloadSockets: [] };
    page.on("console", (message) => {
      if (message.type() === "error") report.problems.push(message.text());
    });
    page.on("pageerror", (error) => report.problems.push(`page error: ${error.message}`));
    for (const path of visit.paths) {
      const socketMessage = page
        .waitForEvent("websocket", {
          predicate: (socket) => socket.url().includes("/_next/hmr"),
          timeout: visit.timeoutMs,
        })
        .then(async (socket) => {
          report.hotReloadSockets.push(socket.url());
          await socket.waitForEvent("framereceived", { timeout: visit.timeoutMs });
        });
      const response = await page.goto(`${visit.origin}${path}`, { waitUntil: "load", timeout: visit.timeoutMs });
      report.statuses.push(response?.status() ?? 0);
      await socketMessage;
    }
    return report;
  } finally {
    await browser.close();
  }
}
