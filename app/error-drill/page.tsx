import { notFound } from "next/navigation";
import { env } from "@/lib/env";

export const dynamic = "force-dynamic";

/**
 * Throws while rendering, so the browser tests see the error page (app/error.tsx) as a failing page shows it. Only in
 * the test stack (ERROR_DRILL=1, set by scripts/test.ts; `npm start` refuses it): anywhere else this address is the
 * 404 page, like any other unknown one.
 */
export default function ErrorDrillPage() {
  if (env().ERROR_DRILL !== "1") notFound();
  throw new Error("error drill: this page throws on purpose (ERROR_DRILL=1)");
}
