"use client";
/** The header's links, the current page marked (`aria-current="page"`). */
import Link from "next/link";
import { usePathname } from "next/navigation";

const SIGNED_IN = [
  { href: "/wallet", label: "Wallet" },
  { href: "/settings/tokens", label: "API tokens" },
  { href: "/settings/security", label: "Security" },
] as const;
const SIGNED_OUT = [
  { href: "/sign-in", label: "Sign in" },
  { href: "/sign-up", label: "Create account" },
] as const;

export function MainNav({ admin = false, signedOut = false }: { admin?: boolean; signedOut?: boolean }) {
  const pathname = usePathname();
  const links = signedOut ? SIGNED_OUT : admin ? [...SIGNED_IN, { href: "/admin", label: "Admin" }] : SIGNED_IN;
  return (
    <nav aria-label="Main" className="main-nav">
      {links.map((link) => {
        const current = pathname === link.href || pathname.startsWith(`${link.href}/`);
        return (
          <Link key={link.href} href={link.href} aria-current={current ? "page" : undefined}>
            {link.label}
          </Link>
        );
      })}
    </nav>
  );
}
