"use client";
/**
 * Refreshes the page's server data every 1.5 s while some top-up is still pending, so its status and the
 * balance change without a reload. Stops by itself after 5 minutes (a row stuck longer is the reconciler's
 * and the admin page's business, not a reason to poll forever).
 */
import { useRouter } from "next/navigation";
import { useEffect } from "react";

const INTERVAL_MS = 1500;
const GIVE_UP_MS = 5 * 60 * 1000;

export function LiveRefresh({ active }: { active: boolean }) {
  const router = useRouter();
  useEffect(() => {
    if (!active) return;
    const started = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - started > GIVE_UP_MS) clearInterval(timer);
      else router.refresh();
    }, INTERVAL_MS);
    return () => clearInterval(timer);
  }, [active, router]);
  return null;
}
