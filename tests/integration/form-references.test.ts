/**
 * Case C20: the wallet page's form references (lib/web/current-form-ref-id.ts, lib/web/verify-form-ref-id.ts,
 * docs/decisions/033-form-references.md), against the real PostgreSQL.
 *
 * The case's scenario runs twice: with the page's minter, and with the count scheme the page used before
 * (`web-topup-<n+1>`), kept here as the negative control. The same assertions pass for the first and are shown to
 * fail for the second. The race between renders is staged: a transaction holds the stored reference's row lock
 * until every render is seen waiting on it in pg_stat_activity, then all are released at once; an unconditional
 * replace, the obvious alternative, hands those renders different references (second negative control).
 */
import { describe, expect, it } from "vitest";
import { validateTopupRequest } from "../../lib/http/operation-requests";
import { rawTopLevelMembers } from "../../lib/http/raw-json";
import { insertClaim } from "../../lib/ledger/claim";
import { currentFormRefId } from "../../lib/web/current-form-ref-id";
import { type FormType, isFormRefId, mintFormRefId } from "../../lib/web/form-refs";
import { verifyFormRefId } from "../../lib/web/verify-form-ref-id";
import { createTestUser, testPool } from "../helpers/db";
import { claimRequest, countRows, dedicatedClient } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";

/** What renders the form: given the user and the form, the reference the page shows. */
type FormRefMinter = (userId: string, type: FormType) => Promise<string>;

/**
 * The count scheme the page used before decision 033 (negative control only): one more than the user's rows
 * named `web-topup-*`. Kept verbatim in behaviour so the scenario below can show it fails.
 */
const countingMinter: FormRefMinter = async (userId, type) => {
  const prefix = type === "topup" ? "web-topup-" : "web-order-";
  const result = await testPool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id LIKE $3",
    [userId, type, `${prefix}%`],
  );
  return `${prefix}${(result.rows[0]?.n ?? 0) + 1}`;
};

const RULES = { maxAmountMinor: 1_000_000, walletCurrency: "USD" };

/**
 * An API client's `POST /api/v1/topups { refId, amount }`: the API's validation, then the ledger's claim.
 * Returns "refused" (400), "new" (a new top-up claimed) or "existing" (the key already had a row).
 */
async function clientTopup(
  userId: string,
  refId: string,
  amountMinor: number,
): Promise<"refused" | "new" | "existing"> {
  const text = JSON.stringify({ refId, amount: amountMinor });
  const input = validateTopupRequest(JSON.parse(text), rawTopLevelMembers(text), RULES);
  if (!input.ok) return "refused";
  const entry = await insertClaim(testPool(), claimRequest(userId, { refId, amountMinor }));
  return entry ? "new" : "existing";
}

/** One form submit: the reference the page showed, whether a row already held it, and whether it claimed a row. */
interface FormSubmit {
  readonly shown: string;
  readonly alreadyUsed: boolean;
  readonly newTopup: boolean;
}

/**
 * C20's input: the form shows its reference; an API client tops up with `web-topup-<n+3>` (n = 0 rows before);
 * then the form is used three times, each after a fresh render. Returns the three submits.
 */
async function c20Scenario(mint: FormRefMinter): Promise<{ submits: FormSubmit[]; client: string }> {
  const user = await createTestUser();
  let shown = await mint(user.id, "topup");
  const client = await clientTopup(user.id, "web-topup-3", 700);
  const submits: FormSubmit[] = [];
  for (const amountMinor of [1000, 2500, 5000]) {
    const alreadyUsed = (await countRows(user.id, "topup", shown)) > 0;
    const entry = await insertClaim(testPool(), claimRequest(user.id, { refId: shown, amountMinor }));
    submits.push({ shown, alreadyUsed, newTopup: entry !== null });
    shown = await mint(user.id, "topup");
  }
  return { submits, client };
}

/** The case's right value: every submit is a new top-up and no render shows a used reference. */
function c20Holds(submits: FormSubmit[]): boolean {
  return (
    submits.every((submit) => submit.newTopup && !submit.alreadyUsed) &&
    new Set(submits.map((submit) => submit.shown)).size === submits.length
  );
}

/**
 * Stages renders racing for the replacement of a claimed reference: claims the stored reference, locks its row in
 * an open transaction, starts `renders` renders of `mint`, waits until each is blocked on that lock (its read saw
 * the claim; its replace waits), then commits so they all proceed at once. Returns the old and the shown references.
 */
async function racingRendersAfterClaim(
  mint: FormRefMinter,
  renders: number,
): Promise<{ before: string; shown: string[]; stored: number }> {
  const user = await createTestUser();
  const before = await currentFormRefId(user.id, "topup");
  await insertClaim(testPool(), claimRequest(user.id, { refId: before }));
  const holder = await dedicatedClient("c20-holder");
  try {
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM form_references WHERE user_id = $1 AND type = 'topup' FOR UPDATE", [user.id]);
    const pending = Array.from({ length: renders }, () => mint(user.id, "topup"));
    await waitForBlockedSessions({ queryPrefix: "INSERT INTO form_references" }, renders);
    await holder.query("COMMIT");
    const shown = await Promise.all(pending);
    const stored = await testPool().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM form_references WHERE user_id = $1",
      [user.id],
    );
    return { before, shown, stored: stored.rows[0]?.n ?? 0 };
  } finally {
    await holder.end();
  }
}

/**
 * The obvious alternative to the conditional replace (negative control only): read, and when a row holds the
 * reference, overwrite it unconditionally. Every render that saw the claim writes its own new reference.
 */
const unconditionalReplace: FormRefMinter = async (userId, type) => {
  const stored = await testPool().query<{ ref_id: string; claimed: boolean }>(
    `SELECT f.ref_id, EXISTS (SELECT 1 FROM ledger_entries l
                               WHERE l.user_id = f.user_id AND l.type = f.type AND l.ref_id = f.ref_id) AS claimed
       FROM form_references f WHERE f.user_id = $1 AND f.type = $2`,
    [userId, type],
  );
  if (stored.rows[0] && !stored.rows[0].claimed) return stored.rows[0].ref_id;
  const replaced = await testPool().query<{ ref_id: string }>(
    `INSERT INTO form_references AS f (user_id, type, ref_id) VALUES ($1, $2, $3)
     ON CONFLICT (user_id, type) DO UPDATE SET ref_id = EXCLUDED.ref_id RETURNING f.ref_id`,
    [userId, type, mintFormRefId()],
  );
  return replaced.rows[0]!.ref_id;
};

describe("C20: form references", () => {
  it("C20: after an API top-up named web-topup-<n+3>, three form submits are three new top-ups, never a used reference", async () => {
    const { submits, client } = await c20Scenario(currentFormRefId);
    expect(client).toBe("new");
    expect(submits.map((submit) => isFormRefId(submit.shown))).toEqual([true, true, true]);
    expect(submits).toEqual(submits.map((submit) => ({ ...submit, alreadyUsed: false, newTopup: true })));
    expect(c20Holds(submits)).toBe(true);
  });

  it("C20 negative control: the old count scheme fails the same scenario (the form shows web-topup-3 for good)", async () => {
    const { submits } = await c20Scenario(countingMinter);
    expect(c20Holds(submits)).toBe(false);
    expect(submits.map((submit) => submit.shown)).toEqual(["web-topup-1", "web-topup-3", "web-topup-3"]);
    expect(submits.map((submit) => submit.newTopup)).toEqual([true, false, false]);
  });

  it("C20: an API client cannot take the reference a form shows, nor any other in the web: namespace", async () => {
    const user = await createTestUser();
    const shown = await currentFormRefId(user.id, "topup");
    expect(await clientTopup(user.id, shown, 1000)).toBe("refused");
    expect(await clientTopup(user.id, mintFormRefId(), 1000)).toBe("refused");
    expect(await countRows(user.id, "topup", shown)).toBe(0);
    expect(await currentFormRefId(user.id, "topup")).toBe(shown);
  });

  it("C20: a reference is kept until a top-up claims it, shared by every render, then replaced by a new one", async () => {
    const user = await createTestUser();
    // Twelve renders at once of a user who never had one (twelve tabs opening): one reference for all.
    const first = await Promise.all(Array.from({ length: 12 }, () => currentFormRefId(user.id, "topup")));
    expect(new Set(first).size).toBe(1);
    const [shown] = first as [string];
    expect(await currentFormRefId(user.id, "topup")).toBe(shown);
    // The pay form has its own reference.
    const order = await currentFormRefId(user.id, "payment");
    expect(order).not.toBe(shown);
    // A failed validation or an unrelated top-up does not move it; a claim of it does.
    expect(await clientTopup(user.id, "web-topup-1", 500)).toBe("new");
    expect(await currentFormRefId(user.id, "topup")).toBe(shown);
    await insertClaim(testPool(), claimRequest(user.id, { refId: shown }));
    const next = await currentFormRefId(user.id, "topup");
    expect(next).not.toBe(shown);
    expect(isFormRefId(next)).toBe(true);
    expect(await countRows(user.id, "topup", next)).toBe(0);
    expect(await currentFormRefId(user.id, "topup")).toBe(next);
    expect(await currentFormRefId(user.id, "payment")).toBe(order);
  });

  it("C20: renders racing after a claim all get the same new reference (staged on the row lock)", async () => {
    const { before, shown, stored } = await racingRendersAfterClaim(currentFormRefId, 6);
    expect(new Set(shown).size).toBe(1);
    expect(shown[0]).not.toBe(before);
    expect(stored).toBe(1);
  });

  it("C20 negative control: an unconditional replace hands racing renders different references", async () => {
    const { shown } = await racingRendersAfterClaim(unconditionalReplace, 6);
    expect(new Set(shown).size).toBeGreaterThan(1);
  });

  it("C20: the form door accepts only references issued to this user's form: the current one or a claimed one", async () => {
    const user = await createTestUser();
    const other = await createTestUser();
    const shown = await currentFormRefId(user.id, "topup");
    expect(await verifyFormRefId(user.id, "topup", shown)).toBe(true);
    expect(await verifyFormRefId(user.id, "payment", shown)).toBe(false);
    expect(await verifyFormRefId(other.id, "topup", shown)).toBe(false);
    expect(await verifyFormRefId(user.id, "topup", mintFormRefId())).toBe(false);
    expect(await verifyFormRefId(user.id, "topup", "web-topup-1")).toBe(false);
    // After the claim the page moves on, but a stale tab's submit of the old reference still replays.
    await insertClaim(testPool(), claimRequest(user.id, { refId: shown }));
    const next = await currentFormRefId(user.id, "topup");
    expect(await verifyFormRefId(user.id, "topup", shown)).toBe(true);
    expect(await verifyFormRefId(user.id, "topup", next)).toBe(true);
  });
});
