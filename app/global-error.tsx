"use client";
/**
 * Shown when the root layout itself fails (the session could not be read: the database is down). It replaces the
 * layout, so it brings its own `<html>`, `<body>` and stylesheet, and a plain link back (the app's header needs the
 * layout that failed). Says the same as app/error.tsx.
 */
import { ErrorNotice } from "./components/error-notice";
import "./globals.css";

export default function GlobalError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <html lang="en">
      <head>
        <title>Something went wrong · Wallet</title>
      </head>
      <body>
        <ErrorNotice digest={error.digest} retry={reset} home={<a href="/wallet">Go to your wallet</a>} />
      </body>
    </html>
  );
}
