"use client";
/** The "Show more" button under a paged table, with its loading state and the last error. */
export function ShowMoreButton({
  nextCursor,
  pending,
  error,
  onClick,
  testId,
}: {
  nextCursor: string | null;
  pending: boolean;
  error: string | null;
  onClick: () => void;
  testId: string;
}) {
  return (
    <>
      {nextCursor !== null && (
        <p>
          <button type="button" onClick={onClick} disabled={pending} aria-busy={pending} data-testid={testId}>
            {pending ? "Loading…" : "Show more"}
          </button>
        </p>
      )}
      {error !== null && <p role="alert">Could not load more: {error}</p>}
    </>
  );
}
