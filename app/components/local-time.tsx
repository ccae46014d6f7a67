"use client";
/**
 * A time for people: rendered on the server in UTC (the server does not know the reader's zone), then, once the
 * page runs in the browser, in the reader's own zone. The first render in the browser prints the server's text,
 * so hydration matches; the switch happens in an effect right after.
 */
import { useEffect, useState } from "react";
import { PAGE_LOCALE } from "@/lib/money";

/** How much of the time to show: `short` (wallet: minutes) or `seconds` (admin). */
export type TimeDetail = "short" | "seconds";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(detail: TimeDetail, timeZone: string | undefined, zone = false): Intl.DateTimeFormat {
  const key = `${detail}:${timeZone ?? "local"}:${zone}`;
  let found = formatters.get(key);
  if (!found) {
    // dateStyle and timeStyle cannot be combined with timeZoneName; the zone's form spells the parts out.
    found = zone
      ? new Intl.DateTimeFormat(PAGE_LOCALE, {
          year: "numeric",
          month: "short",
          day: "numeric",
          hour: "numeric",
          minute: "2-digit",
          second: detail === "seconds" ? "2-digit" : undefined,
          timeZone,
          timeZoneName: "short",
        })
      : new Intl.DateTimeFormat(PAGE_LOCALE, {
          dateStyle: "medium",
          timeStyle: detail === "seconds" ? "medium" : "short",
          timeZone,
        });
    formatters.set(key, found);
  }
  return found;
}

/** `iso` formatted in UTC, with the zone named: what the server renders. */
function utcText(iso: string, detail: TimeDetail = "short"): string {
  return `${formatter(detail, "UTC").format(new Date(iso))} UTC`;
}

/**
 * `iso` as a time for people. With `zone`, the reader's zone is named in the text ("GMT+1", "PST"), as a receipt
 * states it; the server's first render says "UTC" either way.
 */
export function LocalTime({
  iso,
  detail = "short",
  zone = false,
}: {
  iso: string;
  detail?: TimeDetail;
  zone?: boolean;
}) {
  const [text, setText] = useState(() => utcText(iso, detail));
  useEffect(() => {
    setText(formatter(detail, undefined, zone).format(new Date(iso)));
  }, [iso, detail, zone]);
  return (
    <time dateTime={iso} title={utcText(iso, "seconds")}>
      {text}
    </time>
  );
}
