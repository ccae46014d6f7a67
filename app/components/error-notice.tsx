"use client";
/**
 * What the error pages (app/error.tsx inside the layout, app/global-error.tsx when the layout itself failed) say: what
 * happened, that nothing is repeated by trying again, the way back, and the error's reference when Next.js gave one.
 */
import type { ReactNode } from "react";

/**
 * The error page's card.
 *
 * @param props.digest Next.js's digest of a server error (the id the server's log line of that error carries), or
 *   undefined for an error thrown in the browser, which has none.
 * @param props.retry re-renders the failed part of the page (Next's `reset`).
 * @param props.home the way back: a link to the wallet (`<Link>` inside the layout, `<a>` without one).
 */
export function ErrorNotice(props: { digest: string | undefined; retry: () => void; home: ReactNode }) {
  return (
    <main>
      <section className="card error-page" data-testid="error-page">
        <h1>Something went wrong</h1>
        <p>
          This page could not be shown because of an error on our side. Trying again is safe: a payment or top-up you
          sent is never made twice, and your wallet shows what went through.
        </p>
        {props.digest && (
          <p data-testid="error-reference">
            If it keeps happening, tell us this reference: <code>{props.digest}</code>
          </p>
        )}
        <p className="error-actions">
          <button type="button" onClick={props.retry}>
            Try again
          </button>{" "}
          {props.home}
        </p>
      </section>
    </main>
  );
}
