/**
 * "Show more" on the wallet's history (with and without filters) and on the admin page's top-ups: the
 * server renders the first page, each click appends the next page by cursor, and no row appears twice.
 * The rows are seeded as failed operations straight into the ledger (a failed row moves no money, so every
 * invariant of the shared database still holds), spaced one millisecond apart so their order is known.
 */
import { expect, test, type Page } from "@playwright/test";
import pg from "pg";
import { createHash, randomUUID } from "node:crypto";
import { signUp } from "./helpers";

function databaseUrl(): string {
  const info = JSON.parse(process.env.TEST_STACK ?? "{}") as { databaseUrl?: string };
  if (!info.databaseUrl) throw new Error("TEST_STACK has no databaseUrl (run through playwright's global setup)");
  return info.databaseUrl;
}

async function withDb<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl(), application_name: "e2e-show-more" });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Inserts `count` failed rows of `type` for the user, oldest first, 1 ms apart, ending a minute ago. */
async function seedFailedRows(userId: string, type: "topup" | "payment", count: number): Promise<void> {
  const reason = type === "topup" ? "declined_by_bank" : "insufficient_funds";
  await withDb(async (db) => {
    for (let i = 0; i < count; i++) {
      const refId = `seed-${type}-${i}-${randomUUID().slice(0, 8)}`;
      const params = { amount: 100 + i, currency: "USD" };
      await db.query(
        `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status,
                                     failure_reason, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'USD', $5, $6::jsonb, 'failed', $7,
                 now() - interval '1 minute' - ($8::int * interval '1 millisecond'),
                 now() - interval '1 minute')`,
        [
          userId,
          type,
          refId,
          params.amount,
          createHash("sha256").update(refId).digest("hex"),
          JSON.stringify(params),
          reason,
          count - i,
        ],
      );
    }
  });
}

async function rowKeys(page: Page, testId: string): Promise<string[]> {
  return page
    .getByTestId(testId)
    .locator("li")
    .evaluateAll((rows) => rows.map((row) => row.querySelector("a")?.getAttribute("href") ?? ""));
}

test("Show more appends the next page of the wallet's history, and of the admin page's top-ups", async ({
  page,
}, testInfo) => {
  test.setTimeout(90_000);
  const email = await signUp(page);
  const userId = await withDb(
    async (db) => (await db.query<{ id: string }>('SELECT id FROM "user" WHERE email = $1', [email])).rows[0]!.id,
  );
  await seedFailedRows(userId, "topup", 21);
  await seedFailedRows(userId, "payment", 31);

  await page.goto("/wallet");
  // One history of every movement (decision 055): 21 top-ups and 31 payments, 50 a page.
  await expect(page.getByTestId("history").locator("li")).toHaveCount(50);
  await page.getByTestId("history-more").click();
  await expect(page.getByTestId("history").locator("li")).toHaveCount(52);
  await expect(page.getByTestId("history-more")).toHaveCount(0);
  expect(new Set(await rowKeys(page, "history")).size).toBe(52);
  await expect(page.getByTestId("history").locator('li[data-type="topup"]')).toHaveCount(21);

  // "Show more" keeps the filters: the failed top-ups alone, 21 of them, in one page.
  await page.goto("/wallet?type=topup&status=failed");
  await expect(page.getByTestId("history").locator("li")).toHaveCount(21);
  await expect(page.getByTestId("history-more")).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath("wallet-show-more.png"), fullPage: true });

  // The same user as an admin: two rows a page, twice "Show more".
  await withDb((db) => db.query(`UPDATE "user" SET role = 'admin' WHERE id = $1`, [userId]));
  await page.goto("/admin?status=failed&limit=2");
  const adminRows = page.getByTestId("admin-topups").locator("tbody tr");
  await expect(adminRows).toHaveCount(2);
  await page.getByTestId("admin-topups-more").click();
  await expect(adminRows).toHaveCount(4);
  await page.getByTestId("admin-topups-more").click();
  await expect(adminRows).toHaveCount(6);
  const refs = await adminRows.evaluateAll((rows) => rows.map((row) => row.getAttribute("data-ref")));
  expect(new Set(refs).size).toBe(6);
  for (const row of await adminRows.all()) await expect(row).toHaveAttribute("data-status", "failed");
});
