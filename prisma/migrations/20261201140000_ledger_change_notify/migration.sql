-- Live status for the wallet page (docs/decisions/025-live-status-push.md): every change of a top-up's state is
-- announced on the channel `ledger_changes` when its transaction commits (NOTIFY is transactional: a rolled-back
-- change announces nothing). The app's listener (lib/live/ledger-change-feed.ts) holds one direct connection per
-- process and fans the notices out to the user's open pages over Server-Sent Events.
--
-- A trigger rather than a NOTIFY in the application's statements: every writer announces, whichever door moved
-- the row (request, webhook, reconciler, an admin's SQL). Top-ups only (and the bank's adjustments, once that
-- type exists): their outcome arrives after the page that started them has rendered. A payment or a reward is
-- decided inside the request that the page itself made, and NOTIFY serialises the commits of the transactions
-- that send one, so the fast paths stay out of it.
--
-- Payload: {"userId", "type", "refId", "status"}, at most ~350 bytes (ids are bounded: ref_id 128 characters),
-- far below NOTIFY's 8000-byte limit. It names the row, never its amount.
CREATE FUNCTION ledger_change_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(
    'ledger_changes',
    json_build_object('userId', NEW.user_id, 'type', NEW.type, 'refId', NEW.ref_id, 'status', NEW.status)::text
  );
  RETURN NULL;
END
$$;

CREATE TRIGGER ledger_entries_change_notify_insert
  AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.type IN ('topup', 'adjustment'))
  EXECUTE FUNCTION ledger_change_notify();

CREATE TRIGGER ledger_entries_change_notify_status
  AFTER UPDATE OF status ON ledger_entries
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.type IN ('topup', 'adjustment'))
  EXECUTE FUNCTION ledger_change_notify();
