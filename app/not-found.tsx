import type { Metadata } from "next";
import Link from "next/link";

export const metadata: Metadata = { title: "Page not found" };

/**
 * Rendered with status 404 for an address no page answers (and when a page calls `notFound()`), inside the app's
 * layout instead of Next's unstyled default. API paths answer a problem+json 404 instead (app/api/[...unknown]).
 */
export default function NotFound() {
  return (
    <main>
      <section className="card" data-testid="not-found">
        <h1>404 — page not found</h1>
        <p>No page lives at this address. The link may be mistyped, or the page may have moved.</p>
        <p>
          <Link href="/wallet">Go to your wallet</Link>
        </p>
      </section>
    </main>
  );
}
