/**
 * The ads the wallet page offers (contract section 6, case C21). A reward is one per ad per user per local day, so
 * an ad keeps its id every day: "Watch ad A" is always `ad-a`, and clicking it twice on one day is one operation
 * (the second click replays: "already credited today"). The page offers enough ads for the daily cap to be reached.
 */
import type { RewardRules } from "./rules";

/** One ad of the page. */
export interface OfferedAd {
  /** The reward's `adId` (`ad-a` ... `ad-z`). */
  readonly adId: string;
  /** Its name for people ("ad A"). */
  readonly name: string;
}

/**
 * At most 26 ads (A to Z): with the contract's 5 per reward and cap 50 the page offers 10. A cap that takes more
 * than 26 rewards is still honoured by the API; the page then offers 26.
 */
const OFFERED_ADS_MAX = 26;

/** The ads for `rules`: as many as it takes to reach the daily cap (at least one, at most 26). */
export function offeredAds(rules: Pick<RewardRules, "amountMinor" | "dailyCapMinor">): OfferedAd[] {
  const count = Math.min(OFFERED_ADS_MAX, Math.max(1, Math.ceil(rules.dailyCapMinor / rules.amountMinor)));
  return Array.from({ length: count }, (_, index) => {
    const letter = String.fromCharCode("a".charCodeAt(0) + index);
    return { adId: `ad-${letter}`, name: `ad ${letter.toUpperCase()}` };
  });
}

/** The name for people of an ad id: "ad A" for the page's ads, "an ad" for any other (an API client's own id). */
export function adNameOf(adId: string): string {
  const match = /^ad-([a-z])$/.exec(adId);
  return match ? `ad ${match[1]!.toUpperCase()}` : "an ad";
}
