import Link from "next/link";

const SECTIONS = [
  { key: "overview", href: "/admin", label: "Overview" },
  { key: "payouts", href: "/admin/payouts", label: "Payouts" },
  { key: "transfers", href: "/admin/transfers", label: "Transfers" },
  { key: "books", href: "/admin/books", label: "Books" },
] as const;

/** The admin pages' own links (the overview, the payouts, the transfers and the books), the current one marked (`aria-current="page"`). */
export function AdminNav({ current }: { current: (typeof SECTIONS)[number]["key"] }) {
  return (
    <nav aria-label="Admin" className="admin-nav">
      {SECTIONS.map((section) => (
        <Link key={section.key} href={section.href} aria-current={section.key === current ? "page" : undefined}>
          {section.label}
        </Link>
      ))}
    </nav>
  );
}
