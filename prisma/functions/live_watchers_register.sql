-- live_watchers_register: registers (or keeps registered) the users in p_user_ids as watched for p_ttl_s seconds, so
-- that ledger_change_notify announces their top-ups' changes (docs/decisions/046).
--
-- Called by lib/live/ledger-change-feed.ts (SELECT live_watchers_register($1::text[], $2::int)) before it tells a
-- page `ready`, and again to keep the rows fresh while the page is open.
--
-- A user whose row is missing or expired is locked first, with the advisory lock ledger_change_notify holds shared
-- (key (1818850917, hashtext(user_id)); see that file for the race it closes), in one order, so two registrations
-- never deadlock. The exclusive lock waits out the transactions whose trigger found no watcher: once it is granted,
-- every change those transactions made is committed and the page's re-read sees it. A row that is still fresh is
-- only extended: nothing was decided against it. An id with no user (deleted while its page was open) is skipped: it
-- must not fail the registration of everyone else.
CREATE OR REPLACE FUNCTION live_watchers_register(p_user_ids TEXT[], p_ttl_s INTEGER) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1818850917, s.key)
     FROM (SELECT DISTINCT hashtext(u) AS key
             FROM unnest(p_user_ids) AS u
            WHERE NOT EXISTS (SELECT 1 FROM live_watchers w WHERE w.user_id = u AND w.expires_at > now())
            ORDER BY 1) AS s;
  INSERT INTO live_watchers AS w (user_id, expires_at)
  SELECT DISTINCT u, now() + make_interval(secs => p_ttl_s) FROM unnest(p_user_ids) AS u
   WHERE EXISTS (SELECT 1 FROM "user" WHERE id = u)
  ON CONFLICT (user_id) DO UPDATE SET expires_at = greatest(w.expires_at, EXCLUDED.expires_at);
END
$$;
