import type { Metadata } from "next";
import Link from "next/link";
import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { z } from "zod";
import { requireSessionUser } from "@/lib/auth/session-user";
import {
  API_TOKEN_EXPIRY_DAYS,
  API_TOKEN_NAME_MAX_LENGTH,
  type ApiTokenExpiryDays,
  apiTokenNameField,
  createApiToken,
} from "@/lib/api-tokens/create-api-token";
import { type ApiTokenSummary, listApiTokens } from "@/lib/api-tokens/list-api-tokens";
import { revokeApiToken } from "@/lib/api-tokens/revoke-api-token";
import { LocalTime } from "../../components/local-time";
import { TimeZoneNote } from "../../components/time-zone-note";
import { CreateTokenForm, type CreateTokenState } from "./create-token-form";

export const metadata: Metadata = { title: "API tokens" };

const createForm = z.object({
  // 1..100 characters without control characters: a `\u0000` would otherwise reach PostgreSQL, a 500 (case C31).
  name: apiTokenNameField,
  // "never" or one of the offered day counts (the select's values).
  expiry: z.enum(["never", ...API_TOKEN_EXPIRY_DAYS.map(String)] as [string, ...string[]]).default("never"),
});
// Token ids are UUIDs (create-api-token.ts); anything else cannot name a token.
const revokeForm = z.object({ tokenId: z.uuid() });
const pageQuery = z.object({ after: z.uuid().optional() });

/**
 * Creates a token for the signed-in user and answers with it (shown once by CreateTokenForm), or says the cap of
 * TOKENS_PER_USER_MAX active tokens is reached. The user id comes from the session, never from the form.
 */
async function createTokenAction(_state: CreateTokenState, formData: FormData): Promise<CreateTokenState> {
  "use server";
  const user = await requireSessionUser();
  const form = createForm.safeParse({ name: formData.get("name"), expiry: formData.get("expiry") ?? undefined });
  if (!form.success) {
    return {
      kind: "invalid",
      message: `Give the token a name of 1 to ${API_TOKEN_NAME_MAX_LENGTH} characters, without line breaks or other control characters.`,
    };
  }
  const expiresInDays = form.data.expiry === "never" ? null : (Number(form.data.expiry) as ApiTokenExpiryDays);
  const created = await createApiToken({ userId: user.userId, name: form.data.name, expiresInDays });
  if (created.kind === "limit_reached") {
    return {
      kind: "invalid",
      message: `You already have ${created.activeMax} active tokens, the most allowed. Revoke one you no longer use first.`,
    };
  }
  revalidatePath("/settings/tokens");
  return { kind: "created", token: created.token, prefix: created.prefix, name: form.data.name };
}

/**
 * Revokes one of the signed-in user's tokens, then reloads the page (post/redirect/get). A token id that is
 * not the user's, or already revoked, changes nothing.
 */
async function revokeTokenAction(formData: FormData): Promise<void> {
  "use server";
  const user = await requireSessionUser();
  const form = revokeForm.safeParse({ tokenId: formData.get("tokenId") });
  if (form.success) await revokeApiToken({ userId: user.userId, tokenId: form.data.tokenId });
  revalidatePath("/settings/tokens");
  redirect("/settings/tokens");
}

/** A token's state in the status column: active (and until when), revoked (when), or expired (when). */
function TokenStatus({ token, nowMs }: { token: ApiTokenSummary; nowMs: number }) {
  if (token.revokedAt) {
    return (
      <span className="status-cell">
        <span className="badge failed">Revoked</span>
        <span className="reason">
          <LocalTime iso={token.revokedAt.toISOString()} />
        </span>
      </span>
    );
  }
  if (token.expiresAt && token.expiresAt.getTime() <= nowMs) {
    return (
      <span className="status-cell">
        <span className="badge processing">Expired</span>
        <span className="reason">
          <LocalTime iso={token.expiresAt.toISOString()} />
        </span>
      </span>
    );
  }
  return (
    <span className="status-cell">
      <span className="badge succeeded">Active</span>
      <span className="reason">
        {token.expiresAt ? (
          <>
            expires <LocalTime iso={token.expiresAt.toISOString()} />
          </>
        ) : (
          "never expires"
        )}
      </span>
    </span>
  );
}

function TokenTable({ tokens, label, active }: { tokens: ApiTokenSummary[]; label: string; active: boolean }) {
  const nowMs = Date.now();
  return (
    <table aria-label={label} className="cards tokens">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Token</th>
          <th scope="col">Created</th>
          <th scope="col">Status</th>
          {active && (
            <th scope="col">
              <span className="sr-only">Action</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {tokens.map((token) => (
          <tr key={token.id}>
            <td data-label="Name">{token.name}</td>
            <td data-label="Token">
              <code>{token.prefix}…</code>
            </td>
            <td data-label="Created" className="nowrap">
              <LocalTime iso={token.createdAt.toISOString()} />
            </td>
            <td data-label="Status">
              <TokenStatus token={token} nowMs={nowMs} />
            </td>
            {active && (
              <td className="actions">
                <form action={revokeTokenAction} className="token-revoke">
                  <input type="hidden" name="tokenId" value={token.id} />
                  <button type="submit" aria-label={`Revoke token ${token.name}`}>
                    Revoke
                  </button>
                </form>
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export default async function ApiTokensPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const user = await requireSessionUser();
  const query = pageQuery.safeParse(await searchParams);
  const after = query.success ? query.data.after : undefined;
  const { active, inactive, nextInactiveAfterId } = await listApiTokens(user.userId, { inactiveAfterId: after });
  return (
    <main className="settings-page">
      <h1>API tokens</h1>
      <p className="card">
        A token lets a script use the wallet API as you: send it as <code>Authorization: Bearer &lt;token&gt;</code>.
        Revoke a token you no longer use. A password change or{" "}
        <Link href="/settings/security">signing out everywhere</Link> revokes them all unless you choose to keep them.
      </p>
      <CreateTokenForm
        action={createTokenAction}
        expiryDays={[...API_TOKEN_EXPIRY_DAYS]}
        nameMaxLength={API_TOKEN_NAME_MAX_LENGTH}
      />
      <section className="card token-list" aria-labelledby="token-list-heading">
        <h2 id="token-list-heading">Active tokens ({active.length})</h2>
        <TimeZoneNote />
        {active.length === 0 ? (
          <p>You have no active tokens.</p>
        ) : (
          <TokenTable tokens={active} label="Active tokens" active />
        )}
      </section>
      {(inactive.length > 0 || after) && (
        <section className="card token-list" aria-labelledby="token-inactive-heading">
          <h2 id="token-inactive-heading">Revoked and expired tokens</h2>
          {inactive.length === 0 ? (
            <p>No older tokens.</p>
          ) : (
            <TokenTable tokens={inactive} label="Revoked and expired tokens" active={false} />
          )}
          <nav aria-label="Older tokens" className="pager">
            {after && <Link href="/settings/tokens">Newest</Link>}{" "}
            {nextInactiveAfterId && <Link href={`/settings/tokens?after=${nextInactiveAfterId}`}>Older</Link>}
          </nav>
        </section>
      )}
    </main>
  );
}
