-- ledger_take_over_entry: the reconciler's take-over of one unfinished entry whose lease expired (contract section 2:
-- "a row whose lease expired is taken over by the reconciler"), oldest expiry first. It raises the fencing token
-- (`attempt`), so the previous lease holder, if it is still alive somewhere, can no longer move the entry
-- (ledger_move_entry compares the token), renews the lease for `p_worker_id` for `p_lease_ms` milliseconds and
-- appends the take-over to the audit table as a same-status row (from = to) naming the previous owner, so the admin
-- timeline shows who worked on the entry and when the token changed. `p_user_ids` NULL: every user.
--
-- Returns the entry as taken over, its previous lease owner and its age by the database's clock (the re-drive window
-- is measured on it); no row when no expired unfinished entry is left, or every remaining one is being taken over by
-- another session right now: FOR UPDATE SKIP LOCKED moves on instead of queueing, and the UPDATE's WHERE re-checks
-- the guard on the locked version, so two reconcilers never take the same entry. The pick matches the partial index
-- ledger_entries_unfinished_idx (its status predicate, ordered by lease_expires_at), so it reads unfinished rows only.
--
-- Called by lib/ledger/take-over.ts (`takeOverExpiredEntry`).
CREATE OR REPLACE FUNCTION ledger_take_over_entry(p_worker_id text, p_lease_ms int, p_user_ids text[] DEFAULT NULL)
RETURNS TABLE (entry ledger_entries, previous_owner text, age_ms double precision)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_user_id text;
  v_entry_id bigint;
  v_previous_owner text;
  v_entry ledger_entries;
BEGIN
  SELECT e.user_id, e.id, e.lease_owner INTO v_user_id, v_entry_id, v_previous_owner
    FROM ledger_entries e
   WHERE e.status IN ('initiated', 'processing')
     AND e.lease_expires_at < now()
     AND (p_user_ids IS NULL OR e.user_id = ANY (p_user_ids))
   ORDER BY e.lease_expires_at
   LIMIT 1
   FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  UPDATE ledger_entries e
     SET attempt = e.attempt + 1,
         lease_owner = p_worker_id,
         lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
   WHERE e.user_id = v_user_id AND e.id = v_entry_id
     AND e.status IN ('initiated', 'processing')
     AND e.lease_expires_at < now()
  RETURNING e.* INTO v_entry;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM ledger_log_transition(
    p_user_id => v_user_id, p_entry_id => v_entry_id, p_from_status => v_entry.status, p_to_status => v_entry.status,
    p_actor => 'reconciler', p_attempt => v_entry.attempt,
    p_detail => format('lease taken over from %s', COALESCE(v_previous_owner, 'nobody')));
  RETURN QUERY SELECT v_entry, v_previous_owner, (EXTRACT(EPOCH FROM (now() - v_entry.created_at)) * 1000)::float8;
END
$$;
