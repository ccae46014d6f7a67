import type { Metadata } from "next";
import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { z } from "zod";
import { requireSessionUser } from "@/lib/auth/session-user";
import { API_TOKEN_NAME_MAX_LENGTH, createApiToken } from "@/lib/api-tokens/create-api-token";
import { listApiTokens } from "@/lib/api-tokens/list-api-tokens";
import { revokeApiToken } from "@/lib/api-tokens/revoke-api-token";
import { CreateTokenForm, type CreateTokenState } from "./create-token-form";

export const metadata: Metadata = { title: "API tokens" };

const createForm = z.object({ name: z.string().trim().min(1).max(API_TOKEN_NAME_MAX_LENGTH) });
// Token ids are UUIDs (create-api-token.ts); anything else cannot name a token.
const revokeForm = z.object({ tokenId: z.uuid() });

/**
 * Creates a token for the signed-in user and answers with it (shown once by CreateTokenForm). The user id
 * comes from the session, never from the form.
 */
async function createTokenAction(_state: CreateTokenState, formData: FormData): Promise<CreateTokenState> {
  "use server";
  const user = await requireSessionUser();
  const form = createForm.safeParse({ name: formData.get("name") });
  if (!form.success) {
    return { kind: "invalid", message: `Give the token a name of 1 to ${API_TOKEN_NAME_MAX_LENGTH} characters.` };
  }
  const created = await createApiToken({ userId: user.userId, name: form.data.name });
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

function DateTime({ value }: { value: Date }) {
  const iso = value.toISOString();
  return <time dateTime={iso}>{`${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`}</time>;
}

export default async function ApiTokensPage() {
  const user = await requireSessionUser();
  const tokens = await listApiTokens(user.userId);
  return (
    <main className="settings-page">
      <h1>API tokens</h1>
      <p>
        A token lets a script use the wallet API as you: send it as <code>Authorization: Bearer &lt;token&gt;</code>.
        Revoke a token you no longer use.
      </p>
      <CreateTokenForm action={createTokenAction} />
      <section className="token-list" aria-labelledby="token-list-heading">
        <h2 id="token-list-heading">Your tokens</h2>
        {tokens.length === 0 ? (
          <p>You have no tokens yet.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Token</th>
                <th scope="col">Created</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((token) => (
                <tr key={token.id}>
                  <td>{token.name}</td>
                  <td>
                    <code>{token.prefix}…</code>
                  </td>
                  <td>
                    <DateTime value={token.createdAt} />
                  </td>
                  <td>
                    {token.revokedAt ? (
                      <>
                        Revoked <DateTime value={token.revokedAt} />
                      </>
                    ) : (
                      <form action={revokeTokenAction} className="token-revoke">
                        <input type="hidden" name="tokenId" value={token.id} />
                        <button type="submit" aria-label={`Revoke token ${token.name}`}>
                          Revoke
                        </button>
                      </form>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
