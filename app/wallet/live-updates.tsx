"use client";
/**
 * The wallet page's live status (docs/decisions/025-live-status-push.md). The server pushes: an EventSource on
 * `GET /api/v1/events` hears when one of the user's top-ups changes state or money lands without the user's own
 * request (a late bank credit, a transfer received: the trigger announces `transfer_in` rows), PostgreSQL
 * LISTEN/NOTIFY behind it, and the page then re-renders its server data (`router.refresh()`: the balance, the lists
 * and the top-up form's answer all follow). Every `change` refreshes, whatever its type. No request is made while
 * nothing changes.
 *
 * Polling is the fallback only: while the push is not live (the stream cannot open, the server said `down`, or it
 * fell silent for longer than {@link WATCHDOG_MS}) and some top-up on the page is unfinished, the page refreshes
 * every {@link POLL_INTERVAL_MS}, for at most {@link POLL_GIVE_UP_MS}. Each time the push becomes live (`ready`,
 * first or after a reconnect, an app restart or a database failover) the page refreshes once, because changes
 * made while nobody listened were not announced.
 *
 * The small indicator says which mode is on; its `data-live` and `data-refreshing` attributes are what the browser
 * tests read. `data-refreshing` is true from the moment a refresh is due (announcements are debounced for
 * {@link REFRESH_DEBOUNCE_MS}) until its data has rendered, so "false" means no refresh is pending or running.
 */
import { useRouter } from "next/navigation";
import { useEffect, useRef, useState, useTransition } from "react";

/** The stream's URL (lib/live/event-stream.ts). */
const EVENTS_URL = "/api/v1/events";
/**
 * Fallback polling every 3 s: a bank answer shows within 3 s, and an open page without push costs one request per
 * 3 s only while something is unfinished.
 */
const POLL_INTERVAL_MS = 3_000;
/** Polling stops after 5 minutes: a top-up unfinished longer is the reconciler's and the admin page's business. */
const POLL_GIVE_UP_MS = 5 * 60_000;
/** The server pings every 15 s; three silent periods mean the stream is dead even if the socket looks open. */
const WATCHDOG_MS = 45_000;
/** After the stream closed for good (an HTTP error such as 429 or 503), try again in 30 s, polling meanwhile. */
const REOPEN_MS = 30_000;
/** Announcements within 150 ms (a top-up's claim, processing and answer) become one refresh. */
const REFRESH_DEBOUNCE_MS = 150;

type Mode = "connecting" | "push" | "polling";

export function LiveUpdates({ following }: { following: boolean }) {
  const router = useRouter();
  const [refreshing, startTransition] = useTransition();
  const [refreshDue, setRefreshDue] = useState(false);
  const [live, setLive] = useState(false);
  const [supported, setSupported] = useState(true);
  const refreshRef = useRef<() => void>(() => {});
  refreshRef.current = () => startTransition(() => router.refresh());

  // The push: one EventSource for as long as the page is open.
  useEffect(() => {
    if (typeof EventSource === "undefined") {
      setSupported(false);
      return;
    }
    let source: EventSource | null = null;
    let closed = false;
    let refreshTimer: ReturnType<typeof setTimeout> | undefined;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    let reopenTimer: ReturnType<typeof setTimeout> | undefined;

    const refreshSoon = () => {
      if (refreshTimer !== undefined) return;
      setRefreshDue(true);
      refreshTimer = setTimeout(() => {
        refreshTimer = undefined;
        // Both updates land in one render: the transition's pending state takes over from `refreshDue`.
        setRefreshDue(false);
        refreshRef.current();
      }, REFRESH_DEBOUNCE_MS);
    };
    const drop = () => {
      setLive(false);
      clearTimeout(watchdog);
      source?.close();
      source = null;
      if (!closed) reopenTimer = setTimeout(open, REOPEN_MS);
    };
    const heard = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(drop, WATCHDOG_MS);
    };
    function open() {
      if (closed) return;
      const current = new EventSource(EVENTS_URL);
      source = current;
      current.addEventListener("ready", () => {
        heard();
        setLive(true);
        refreshSoon();
      });
      current.addEventListener("change", () => {
        heard();
        refreshSoon();
      });
      current.addEventListener("ping", heard);
      current.addEventListener("down", () => {
        heard();
        setLive(false);
      });
      current.addEventListener("error", () => {
        setLive(false);
        // CONNECTING: the browser retries by itself (`retry: 3000`). CLOSED: an HTTP error; retry later ourselves.
        if (current.readyState === EventSource.CLOSED && source === current) drop();
      });
    }
    open();
    return () => {
      closed = true;
      clearTimeout(refreshTimer);
      clearTimeout(watchdog);
      clearTimeout(reopenTimer);
      source?.close();
    };
  }, []);

  // The fallback: poll while the push is not live and something is unfinished, for at most POLL_GIVE_UP_MS.
  const polling = !live && following;
  useEffect(() => {
    if (!polling) return;
    const startedMs = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - startedMs > POLL_GIVE_UP_MS) clearInterval(timer);
      else refreshRef.current();
    }, POLL_INTERVAL_MS);
    return () => clearInterval(timer);
  }, [polling]);

  const mode: Mode = live ? "push" : supported && !polling ? "connecting" : "polling";
  return (
    <span className="live-indicator" data-live={mode} data-refreshing={refreshing || refreshDue} data-testid="live">
      {mode === "push" ? "Live" : mode === "polling" ? "Updating every few seconds" : ""}
    </span>
  );
}
