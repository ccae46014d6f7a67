"use client";
/**
 * Shown inside the app's layout when a page throws while rendering (Next.js's error boundary), instead of Next's
 * unstyled default: what happened, "Try again", the way back to the wallet, and the error's reference (Next's digest,
 * which its server log line carries). The layout's own errors are app/global-error.tsx's.
 */
import Link from "next/link";
import { useEffect } from "react";
import { ErrorNotice } from "./components/error-notice";

export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => {
    document.title = "Something went wrong · Wallet";
  }, []);
  // The server logged the error with its digest; an error thrown in the browser is shown in its console only.
  useEffect(() => {
    if (!error.digest) console.error(error);
  }, [error]);
  return <ErrorNotice digest={error.digest} retry={reset} home={<Link href="/wallet">Go to your wallet</Link>} />;
}
