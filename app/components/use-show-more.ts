"use client";
/**
 * "Show more" for a list that pages by cursor: the server renders the first page, and each click
 * appends the next page, fetched by a server action with the last `nextCursor`. The pages after the first follow
 * the cursor of the first page they were loaded from: when the first page itself changes (the wallet page refreshes
 * while a top-up is pending, so a new row may push one off the first page), the appended pages are dropped and the
 * list starts again from the new first page, so no row is ever skipped or shown twice.
 */
import { useState, useTransition } from "react";

/** What a "Show more" server action answers: the next page, or why the cursor was refused. */
export type MoreResult<T> =
  | { readonly ok: true; readonly items: T[]; readonly nextCursor: string | null }
  | { readonly ok: false; readonly detail: string };

interface Appended<T> {
  /** The first page's `nextCursor` the appended pages continue from. */
  readonly from: string | null;
  readonly items: T[];
  readonly nextCursor: string | null;
}

/**
 * Returns the rows to show (the first page, then every appended page), the cursor of the next page (null when
 * there is none), whether a page is loading, the last error, and `showMore` for the button.
 */
export function useShowMore<T>(
  first: { items: T[]; nextCursor: string | null },
  loadMore: (cursor: string) => Promise<MoreResult<T>>,
): { items: T[]; nextCursor: string | null; pending: boolean; error: string | null; showMore: () => void } {
  const [appended, setAppended] = useState<Appended<T> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const current = appended !== null && appended.from === first.nextCursor ? appended : null;
  const items = current ? [...first.items, ...current.items] : first.items;
  const nextCursor = current ? current.nextCursor : first.nextCursor;

  const showMore = () => {
    if (nextCursor === null) return;
    const from = first.nextCursor;
    startTransition(async () => {
      const result = await loadMore(nextCursor);
      if (!result.ok) {
        setError(result.detail);
        return;
      }
      setError(null);
      setAppended((previous) => {
        const base = previous !== null && previous.from === from ? previous.items : [];
        return { from, items: [...base, ...result.items], nextCursor: result.nextCursor };
      });
    });
  };
  return { items, nextCursor, pending, error, showMore };
}
