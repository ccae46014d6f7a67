import type { Metadata, Viewport } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { getSessionUser } from "@/lib/auth/session-user";
import { MainNav } from "./components/main-nav";
import { signOutAction } from "./sign-out/actions";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Wallet", template: "%s · Wallet" },
  description: "A wallet that credits money exactly once.",
};

/** Phones lay the page out at their own width (no desktop-width zoomed-out page). */
export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default async function RootLayout({ children }: { children: ReactNode }) {
  const user = await getSessionUser();
  return (
    <html lang="en">
      <body>
        <a className="skip-link" href="#content">
          Skip to content
        </a>
        <header className="top">
          <div className="top-inner">
            <Link href={user ? "/wallet" : "/sign-in"} className="brand">
              <span aria-hidden="true" className="brand-mark">
                ◆
              </span>{" "}
              Wallet
            </Link>
            {user ? (
              <>
                <MainNav admin={user.role === "admin"} />
                <div className="account">
                  <span className="who" title={user.email}>
                    {user.email}
                  </span>
                  <form action={signOutAction}>
                    <button type="submit" className="link">
                      Sign out
                    </button>
                  </form>
                </div>
              </>
            ) : (
              <MainNav signedOut />
            )}
          </div>
        </header>
        <div id="content">{children}</div>
      </body>
    </html>
  );
}
