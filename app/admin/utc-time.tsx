import { PAGE_LOCALE } from "@/lib/money";

/** "Dec 2, 2026, 14:03:07": day and 24-hour time with seconds, in UTC. */
const UTC_SECONDS = new Intl.DateTimeFormat(PAGE_LOCALE, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
  timeZone: "UTC",
});

/**
 * A time on the admin pages: always UTC with the zone written after it ("Dec 2, 2026, 14:03:07 UTC"), the operators'
 * clock, the same as the charts' hours and the server's logs, so a page never mixes zones. The same text on the server
 * and in the browser (nothing switches after hydration).
 *
 * @param props.iso an ISO 8601 instant.
 */
export function UtcTime({ iso }: { iso: string }) {
  return <time dateTime={iso}>{UTC_SECONDS.format(new Date(iso))} UTC</time>;
}
