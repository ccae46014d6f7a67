import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { getSessionUser } from "@/lib/auth/session-user";
import { signOutAction } from "./sign-out/actions";
import "./globals.css";

export const metadata: Metadata = {
  title: "Wallet",
  description: "A wallet that credits money exactly once.",
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  const user = await getSessionUser();
  return (
    <html lang="en">
      <body>
        <header className="top">
          <Link href="/wallet" className="brand">
            Wallet
          </Link>
          <nav>
            {user ? (
              <>
                <Link href="/wallet">Wallet</Link>
                <Link href="/settings/tokens">API tokens</Link>
                <Link href="/settings/security">Security</Link>
                {user.role === "admin" && <Link href="/admin">Admin</Link>}
                <span className="who">{user.email}</span>
                <form action={signOutAction}>
                  <button type="submit" className="link">
                    Sign out
                  </button>
                </form>
              </>
            ) : (
              <>
                <Link href="/sign-in">Sign in</Link>
                <Link href="/sign-up">Sign up</Link>
              </>
            )}
          </nav>
        </header>
        {children}
      </body>
    </html>
  );
}
