/**
 * The test stack's mail catcher (MailDev) as the browser tests read it: every message the app sent, through its REST
 * API (`GET /email`), filtered by recipient.
 */
import { expect } from "@playwright/test";

/** One caught message, as MailDev's API gives it (the fields the tests read). */
export interface CaughtMail {
  readonly subject: string;
  readonly to: ReadonlyArray<{ address: string }>;
  readonly text: string;
  readonly html: string;
}

function inboxUrl(): string {
  const info = JSON.parse(process.env.TEST_STACK ?? "{}") as { mailInboxUrl?: string | null };
  if (!info.mailInboxUrl) throw new Error("TEST_STACK has no mailInboxUrl (run through playwright's global setup)");
  return info.mailInboxUrl;
}

/** Every message sent to `address` so far, oldest first. */
export async function mailTo(address: string): Promise<CaughtMail[]> {
  const response = await fetch(`${inboxUrl()}/email`);
  if (!response.ok) throw new Error(`mail catcher: HTTP ${response.status}`);
  const all = (await response.json()) as CaughtMail[];
  return all.filter((mail) => mail.to.some((to) => to.address.toLowerCase() === address.toLowerCase()));
}

/** Waits (at most 20 s) for a message to `address` whose subject matches, and returns it. */
export async function waitForMail(address: string, subject: RegExp): Promise<CaughtMail> {
  let found: CaughtMail | undefined;
  await expect
    .poll(
      async () => {
        found = (await mailTo(address)).find((mail) => subject.test(mail.subject));
        return found !== undefined;
      },
      { timeout: 20_000, intervals: [200] },
    )
    .toBe(true);
  return found!;
}

/** The first link in a message's text that starts with `prefix` (the app's own links). */
export function linkIn(mail: CaughtMail, prefix: string): string {
  const match = mail.text.match(/https?:\/\/\S+/g)?.find((url) => new URL(url).pathname.startsWith(prefix));
  if (!match) throw new Error(`no ${prefix} link in "${mail.subject}":\n${mail.text}`);
  return match.replace(/[)\].,]+$/, "");
}
