/**
 * The reward day (contract section 6): a reward's key is `<adId>:<YYYY-MM-DD>` where the date is the local
 * calendar day in REWARD_TZ at the moment of the request. The clock is always passed in (`now`), so tests can
 * stand just before or after a local midnight in any zone.
 */

/** `YYYY-MM-DD`, the form of a reward day inside ref ids and Redis keys. */
const REWARD_DAY_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone (building one costs far more than using it). Throws RangeError for an unknown zone. */
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/**
 * The local calendar day of the instant `now` in `timeZone` (an IANA name such as "UTC" or "Asia/Tokyo"),
 * as `YYYY-MM-DD`.
 *
 * Throws `RangeError` for an unknown zone, an invalid date, or a year outside 2..9998 (so the local year always
 * fits the 4 digits of the contract's 10-character day).
 */
export function rewardDay(now: Date, timeZone: string): string {
  if (Number.isNaN(now.getTime())) throw new RangeError("rewardDay: invalid date");
  // Years 2..9998 in UTC keep the local year (at most a day away) inside 1..9999, which prints as 4 digits
  // and has no era to lose.
  const utcYear = now.getUTCFullYear();
  if (utcYear < 2 || utcYear > 9998) throw new RangeError(`rewardDay: year ${utcYear} is outside 2..9998`);
  const parts = formatterFor(timeZone).formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
  return `${part("year").padStart(4, "0")}-${part("month")}-${part("day")}`;
}

/** The calendar day after `day` (`YYYY-MM-DD`), computed on the proleptic Gregorian calendar. */
export function nextRewardDay(day: string): string {
  const match = REWARD_DAY_PATTERN.exec(day);
  if (!match) throw new RangeError(`nextRewardDay: ${JSON.stringify(day)} is not YYYY-MM-DD`);
  const next = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + 1));
  return next.toISOString().slice(0, 10);
}

/**
 * How far from UTC midnight of the next day the local midnight can be, in ms. Zone offsets range from
 * UTC−12 to UTC+14; 15 h on each side covers both with an hour to spare.
 */
const ZONE_OFFSET_BOUND_MS = 15 * 3600 * 1000;

/**
 * The instant `day` ends in `timeZone`: the first millisecond whose local day is after `day` (normally the
 * next local midnight; where a DST change skips midnight, e.g. America/Santiago in September, the first
 * instant that exists on the next day). Used to expire the day's cap keys after the day is over.
 *
 * `day`: `YYYY-MM-DD`. Returns a Date. Throws `RangeError` for a malformed day or an unknown zone.
 * Where a zone repeats the last hour before midnight (a DST end at midnight), the earlier of the two
 * midnights is returned; the cap keys' grace period covers the repeated hour.
 */
export function rewardDayEndsAt(day: string, timeZone: string): Date {
  const next = nextRewardDay(day);
  const match = REWARD_DAY_PATTERN.exec(next)!;
  const utcMidnightMs = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  // Binary search for the first millisecond whose local day is `next` or later. At the low end the local
  // day is still `day` or earlier; at the high end it is already `next` or later (offset bound above).
  let lowMs = utcMidnightMs - ZONE_OFFSET_BOUND_MS;
  let highMs = utcMidnightMs + ZONE_OFFSET_BOUND_MS;
  while (highMs - lowMs > 1) {
    const midMs = lowMs + Math.floor((highMs - lowMs) / 2);
    if (rewardDay(new Date(midMs), timeZone) >= next) highMs = midMs;
    else lowMs = midMs;
  }
  return new Date(highMs);
}
