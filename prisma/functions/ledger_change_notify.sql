-- ledger_change_notify: announces a change of a top-up's (an adjustment's, a payout's) state, a payout's return or a
-- transfer received on the channel `ledger_changes`
-- when its transaction commits, but only for a user someone is watching (docs/decisions/025 and 046). NOTIFY is
-- transactional: a rolled-back change announces nothing.
--
-- Called by the triggers ledger_entries_change_notify_insert (AFTER INSERT) and ledger_entries_change_notify_status
-- (AFTER UPDATE OF status, when it changed) on ledger_entries, for the types 'topup' and 'adjustment', and since
-- prisma/migrations/20261212100000_payouts_and_transfers 'payout', 'payout_return' and 'transfer_in', and since
-- prisma/migrations/20261214100000_transfer_reversals a reversal's two sides (a trigger is schema). The listener is
-- lib/live/ledger-change-feed.ts: one direct connection per process, fanning the notices out to the user's open
-- pages over Server-Sent Events.
--
-- A trigger rather than a NOTIFY in the application's statements: every writer announces, whichever door moved the
-- row (request, webhook, reconciler, an admin's SQL). Only movements whose outcome arrives after the page that started
-- them has rendered (a top-up, a payout and its return), or that another user's request made (a transfer received). A payment or a reward is decided inside the request that the page itself
-- made, and NOTIFY serialises the commits of the transactions that send one, so the fast paths stay out of it.
--
-- Only watched users: every NOTIFY costs every committing transaction that sent one (PostgreSQL serialises the
-- commits of notifying transactions on one database-wide lock, held through the commit's WAL flush), and the wallet
-- page is open for a tiny share of top-ups. A process that serves a live page registers its user in `live_watchers`
-- (live_watchers_register) before it tells the page `ready`, and keeps the row fresh while the page is open.
--
-- The race this must not lose: this trigger finds no watcher, then the page registers, says `ready` and re-reads the
-- top-up before this transaction commits; the page would never hear of the change. So the trigger holds a shared
-- advisory lock on the user until its transaction ends, and a registration of a user not yet watched takes that lock
-- exclusively: it waits until every transaction that may have decided not to announce has ended (the page's re-read
-- then sees its change), and a trigger that comes after it waits for its commit and then sees the row (READ
-- COMMITTED: each statement of this function reads a fresh snapshot). Lock key: (1818850917, the ASCII of "live" read
-- as one integer; hashtext(user_id)); two users with one hash only wait for each other.
--
-- Payload: {"userId", "type", "refId", "status"}, at most ~350 bytes (ids are bounded: ref_id 128 characters), far
-- below NOTIFY's 8000-byte limit. It names the row, never its amount.
CREATE OR REPLACE FUNCTION ledger_change_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1818850917, hashtext(NEW.user_id));
  IF EXISTS (SELECT 1 FROM live_watchers WHERE user_id = NEW.user_id AND expires_at > now()) THEN
    PERFORM pg_notify(
      'ledger_changes',
      json_build_object('userId', NEW.user_id, 'type', NEW.type, 'refId', NEW.ref_id, 'status', NEW.status)::text
    );
  END IF;
  RETURN NULL;
END
$$;
