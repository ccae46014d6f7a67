/**
 * The reward day (contract section 6: the key's date is the local day in REWARD_TZ) with an injected clock:
 * just before and just after local midnight in zones other than UTC, DST days, and the whole reward path
 * across a midnight.
 */
import { describe, expect, it } from "vitest";
import { creditReward } from "../../lib/rewards/credit-reward";
import { getRewardProgress } from "../../lib/rewards/get-reward-progress";
import { nextRewardDay, rewardDay, rewardDayEndsAt } from "../../lib/rewards/reward-day";
import { rewardCapStore } from "../../lib/rewards/cap-store";
import type { RewardRules } from "../../lib/rewards/rules";
import type { OperationResult } from "../../lib/ledger";
import { createTestUser } from "../helpers/db";
import { balanceOf, countRows } from "../helpers/ledger";

const at = (iso: string) => new Date(iso);

describe("rewardDay and rewardDayEndsAt", () => {
  it("Asia/Tokyo (UTC+9): the day turns at 15:00 UTC", () => {
    expect(rewardDay(at("2026-03-14T14:59:59.999Z"), "Asia/Tokyo")).toBe("2026-03-14");
    expect(rewardDay(at("2026-03-14T15:00:00.000Z"), "Asia/Tokyo")).toBe("2026-03-15");
    expect(rewardDay(at("2026-03-14T14:59:59.999Z"), "UTC")).toBe("2026-03-14");
    expect(rewardDayEndsAt("2026-03-14", "Asia/Tokyo").toISOString()).toBe("2026-03-14T15:00:00.000Z");
  });

  it("America/Los_Angeles (UTC-8): the local day lags the UTC day", () => {
    expect(rewardDay(at("2026-01-01T07:59:59.999Z"), "America/Los_Angeles")).toBe("2025-12-31");
    expect(rewardDay(at("2026-01-01T08:00:00.000Z"), "America/Los_Angeles")).toBe("2026-01-01");
    expect(rewardDayEndsAt("2025-12-31", "America/Los_Angeles").toISOString()).toBe("2026-01-01T08:00:00.000Z");
  });

  it("quarter-hour and extreme offsets: Asia/Kathmandu (+05:45), Pacific/Kiritimati (+14), Etc/GMT+12 (-12)", () => {
    expect(rewardDayEndsAt("2026-01-01", "Asia/Kathmandu").toISOString()).toBe("2026-01-01T18:15:00.000Z");
    expect(rewardDayEndsAt("2026-01-01", "Pacific/Kiritimati").toISOString()).toBe("2026-01-01T10:00:00.000Z");
    expect(rewardDayEndsAt("2026-01-01", "Etc/GMT+12").toISOString()).toBe("2026-01-02T12:00:00.000Z");
  });

  it("DST days: New York's 23-hour and 25-hour days end at their local midnights", () => {
    expect(rewardDayEndsAt("2026-03-07", "America/New_York").toISOString()).toBe("2026-03-08T05:00:00.000Z");
    expect(rewardDayEndsAt("2026-03-08", "America/New_York").toISOString()).toBe("2026-03-09T04:00:00.000Z");
    expect(rewardDayEndsAt("2026-11-01", "America/New_York").toISOString()).toBe("2026-11-02T05:00:00.000Z");
  });

  it("a midnight that does not exist (America/Santiago, DST starts at 00:00): the day ends at the first instant of the next", () => {
    const end = rewardDayEndsAt("2026-09-05", "America/Santiago");
    expect(rewardDay(new Date(end.getTime() - 1), "America/Santiago")).toBe("2026-09-05");
    expect(rewardDay(end, "America/Santiago")).toBe("2026-09-06");
    expect(end.toISOString()).toBe("2026-09-06T04:00:00.000Z");
  });

  it("calendar arithmetic and refusals", () => {
    expect(nextRewardDay("2024-02-28")).toBe("2024-02-29");
    expect(nextRewardDay("2026-12-31")).toBe("2027-01-01");
    expect(() => nextRewardDay("2026-1-1")).toThrow(RangeError);
    expect(() => rewardDay(new Date("2026-01-01T00:00:00Z"), "Mars/Olympus")).toThrow(RangeError);
    expect(() => rewardDay(new Date(Number.NaN), "UTC")).toThrow(RangeError);
  });
});

describe("creditReward across a local midnight (injected clock, Asia/Tokyo, cap 10)", () => {
  const rules: RewardRules = { amountMinor: 5, dailyCapMinor: 10, timeZone: "Asia/Tokyo", currency: "USD" };
  const beforeMidnight = at("2026-03-14T14:59:59.999Z");
  const afterMidnight = at("2026-03-14T15:00:00.000Z");

  const status = (result: OperationResult) =>
    result.kind === "response"
      ? `${result.response.status}${result.replayed ? " replayed" : ""}`
      : result.kind === "refused"
        ? result.code
        : result.kind;

  it("keys, caps and replays each local day separately", async () => {
    const user = await createTestUser();
    const claim = (adId: string, now: Date) => creditReward({ userId: user.id, adId, now }, { rules });

    const first = await claim("ad-1", beforeMidnight);
    expect(status(first)).toBe("201");
    if (first.kind === "response") expect(JSON.parse(first.response.body).reward.day).toBe("2026-03-14");
    expect(status(await claim("ad-2", beforeMidnight))).toBe("201");
    expect(status(await claim("ad-3", beforeMidnight))).toBe("daily_cap_reached");

    // One millisecond later it is the 15th in Tokyo: the same ad is a new operation under a fresh cap.
    const next = await claim("ad-1", afterMidnight);
    expect(status(next)).toBe("201");
    if (next.kind === "response") expect(JSON.parse(next.response.body).reward.day).toBe("2026-03-15");
    expect(status(await claim("ad-1", afterMidnight))).toBe("201 replayed");
    // The 14th's reward still replays although that day is at its cap.
    expect(status(await claim("ad-1", beforeMidnight))).toBe("201 replayed");

    expect(await countRows(user.id, "reward", "ad-1:2026-03-14")).toBe(1);
    expect(await countRows(user.id, "reward", "ad-1:2026-03-15")).toBe(1);
    expect(await balanceOf(user.id)).toBe(15);
    expect((await rewardCapStore().readDay(user.id, "2026-03-14")).counterMinor).toBe(10);
    expect((await rewardCapStore().readDay(user.id, "2026-03-15")).counterMinor).toBe(5);

    expect(await getRewardProgress(user.id, beforeMidnight, rules)).toMatchObject({
      day: "2026-03-14",
      earnedMinor: 10,
      capReached: true,
    });
    expect(await getRewardProgress(user.id, afterMidnight, rules)).toMatchObject({
      day: "2026-03-15",
      earnedMinor: 5,
      capReached: false,
    });
  });
});
