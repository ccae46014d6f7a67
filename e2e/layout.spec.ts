/**
 * Every page at a 390 x 844 phone and a 1280 x 800 desktop: nothing scrolls sideways, and no visible element's box
 * extends past the viewport (so `overflow-x: hidden` on a container cannot pass a page that is too wide; only a box
 * that scrolls sideways by itself, `overflow-x: auto|scroll`, may hold wider content). A full-page screenshot of each
 * is saved as a test artefact. With DOCS_SCREENSHOTS=1 the wallet and admin ones are also written to docs/ for the
 * README (`DOCS_SCREENSHOTS=1 npm run test:e2e -- e2e/layout.spec.ts`).
 */
import { join } from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { forEveryPage, type SeededUser, seedUserIn } from "./pages";

const VIEWPORTS = [
  { label: "phone", width: 390, height: 844 },
  { label: "desktop", width: 1280, height: 800 },
] as const;

/** The screenshots the README shows: page name and viewport label → file under docs/. */
const DOCS_SCREENSHOTS: Record<string, string> = {
  "wallet-desktop": "wallet-desktop.png",
  "wallet-phone": "wallet-phone.png",
  "admin-desktop": "admin-desktop.png",
  "admin-phone": "admin-phone.png",
};

/** What sticks out: the document's scroll width, and each visible element whose box crosses a side of the viewport. */
async function overflowOf(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const problems: string[] = [];
    const scrollWidth = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
    if (scrollWidth > width) problems.push(`the page is ${scrollWidth} px wide in a ${width} px viewport`);
    // Inside a box that scrolls sideways by itself, content may be wider (that box is checked itself); inside a box
    // clipped to nothing (`clip: rect(0 0 0 0)`, the screen-reader-only pattern) nothing is visible.
    const exempt = (element: Element): boolean => {
      for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
        const style = getComputedStyle(parent);
        if (style.overflowX === "auto" || style.overflowX === "scroll") return true;
        if (style.position === "absolute" && style.clip === "rect(0px, 0px, 0px, 0px)") return true;
      }
      return false;
    };
    for (const element of document.body.querySelectorAll("*")) {
      if (!element.checkVisibility({ checkOpacity: false, checkVisibilityCSS: true })) continue;
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      if (box.left >= -1 && box.right <= width + 1) continue;
      if (exempt(element)) continue;
      const name = `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}${
        element.getAttribute("class") ? `.${element.getAttribute("class")!.trim().replaceAll(/\s+/g, ".")}` : ""
      }`;
      problems.push(
        `${name} "${(element.textContent ?? "").trim().slice(0, 40)}" spans ${Math.round(box.left)}..${Math.round(box.right)} px`,
      );
    }
    return problems;
  });
}

let user: SeededUser;

test.beforeAll(async ({ browser }) => {
  // Two sign-ups, three top-ups, two payments, a reward and two tokens: 60 s and more on a loaded machine.
  test.setTimeout(180_000);
  user = await seedUserIn(browser);
});

for (const viewport of VIEWPORTS) {
  test(`every page fits a ${viewport.width} px ${viewport.label}, with a screenshot of each`, async ({
    browser,
  }, testInfo) => {
    // Every page of e2e/pages.ts (about 25 with their opened states), two sign-ins and a full-page screenshot of each:
    // under a minute on a quiet machine, several at nice 19 on a loaded one, so 10 minutes leaves room.
    test.setTimeout(600_000);
    const found: string[] = [];
    await forEveryPage(browser, user, viewport, async (visit, tab) => {
      for (const problem of await overflowOf(tab)) found.push(`${visit.name} at ${viewport.width} px: ${problem}`);
      const shot = `${visit.name}-${viewport.label}`;
      await tab.screenshot({ path: testInfo.outputPath(`${shot}.png`), fullPage: true });
      if (process.env.DOCS_SCREENSHOTS === "1" && DOCS_SCREENSHOTS[shot]) {
        await tab.screenshot({ path: join(__dirname, "..", "docs", DOCS_SCREENSHOTS[shot]!), fullPage: true });
      }
    });
    expect(found).toEqual([]);
  });
}
