-- Live status announces only what someone is watching (docs/decisions/046-announce-only-watched-users.md).
--
-- Every NOTIFY costs every committing transaction that sent one: PostgreSQL serialises the commits of notifying
-- transactions on one database-wide lock, held through the commit's WAL flush. A top-up announced two states, and
-- almost always to nobody: the wallet page is open for a tiny share of top-ups. Now a process that serves a live
-- page registers its user in `live_watchers` (lib/live/ledger-change-feed.ts) before it tells the page `ready`, and
-- keeps the row fresh while the page is open; the trigger announces only for users with a fresh row.
--
-- The race this must not lose: a transaction's trigger finds no watcher, then the page registers, says `ready` and
-- re-reads the top-up before that transaction commits; the page would never hear of the change. So the trigger
-- holds a shared advisory lock on the user until its transaction ends, and a registration of a user not yet watched
-- takes that lock exclusively: it waits until every transaction that may have decided not to announce has ended
-- (the page's re-read then sees its change), and a trigger that comes after it waits for its commit and then sees
-- the row (READ COMMITTED: each statement of the trigger function reads a fresh snapshot). Lock key: (the ASCII of
-- "live", hashtext(user_id)); two users with one hash only wait for each other.
CREATE TABLE live_watchers (
  user_id    TEXT        PRIMARY KEY REFERENCES "user" (id) ON DELETE CASCADE,
  expires_at TIMESTAMPTZ(3) NOT NULL
);

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

-- Registers (or keeps registered) the users in p_user_ids for p_ttl_s seconds. A user whose row is missing or
-- expired is locked first, in one order (two registrations never deadlock), which waits out the transactions whose
-- trigger found no watcher; a row that is still fresh is only extended, nothing was decided against it. An id with
-- no user (deleted while its page was open) is skipped: it must not fail the registration of everyone else.
CREATE FUNCTION live_watchers_register(p_user_ids TEXT[], p_ttl_s INTEGER) RETURNS void
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
