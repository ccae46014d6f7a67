"use client";
/**
 * The one line that states a page's time zone, beside times shown with {@link LocalTime} (which does not repeat the
 * zone on every line). Rendered on the server as "Times are in UTC." (what LocalTime's server text is), then, in the
 * browser, as the reader's zone by name: "Times are in your time zone, Europe/Berlin (GMT+1)." The switch happens in
 * the same effect turn as LocalTime's, so the note and the times never disagree.
 */
import { useEffect, useState } from "react";
import { PAGE_LOCALE } from "@/lib/money";

/** The reader's zone as "Area/City (short name)", or null when the browser does not say. */
function readerZone(): string | null {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone) return null;
  const short = new Intl.DateTimeFormat(PAGE_LOCALE, { timeZoneName: "short" })
    .formatToParts(new Date())
    .find((part) => part.type === "timeZoneName")?.value;
  return short && short !== zone ? `${zone} (${short})` : zone;
}

export function TimeZoneNote() {
  const [zone, setZone] = useState<string | null>(null);
  useEffect(() => {
    setZone(readerZone());
  }, []);
  return (
    <p className="hint" data-testid="time-zone-note">
      {zone === null ? "Times are in UTC." : `Times are in your time zone, ${zone}.`}
    </p>
  );
}
