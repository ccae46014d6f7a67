-- Mail that people get (docs/decisions/054-mail-outbox.md): address checks, password resets, notices and receipts.
--
-- One row per event that sends a message, keyed by the event (`event_key`): the row is the claim, so a message is
-- queued at most once however often its event is reported (a webhook delivered three times credits once, and its
-- receipt is queued once). Rows are sent after the transaction that queued them commits (a worker only sees
-- committed rows), by a worker that takes a lease on the row (lib/mail/outbox.ts) like any other claimed operation:
--   pending  -> sending (lease, fencing token +1) -> sent
--                                                -> pending again, later (the server never accepted it)
--                                                -> failed (refused for good) | unknown (it may have been accepted)
-- A message is never sent twice: a lease that ran out while sending leaves the row `unknown`, never `pending`.
CREATE TABLE mail_outbox (
  id               BIGSERIAL      PRIMARY KEY,
  event_key        TEXT           NOT NULL UNIQUE CHECK (length(event_key) <= 200),
  kind             TEXT           NOT NULL
                   CHECK (kind IN ('receipt', 'address_check', 'password_reset', 'password_changed', 'new_device')),
  user_id          TEXT           NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
  -- The ledger entry a receipt is for; null for every other kind.
  entry_id         BIGINT,
  -- What the message needs beyond the user and the entry (a link with a single-use token); emptied once sent.
  payload          JSONB,
  status           TEXT           NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'unknown')),
  attempts         INTEGER        NOT NULL DEFAULT 0,
  next_attempt_at  TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  lease_owner      TEXT,
  lease_expires_at TIMESTAMPTZ(3),
  fencing_token    INTEGER        NOT NULL DEFAULT 0,
  last_error       TEXT           CHECK (length(last_error) <= 500),
  created_at       TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  sent_at          TIMESTAMPTZ(3),
  CHECK ((status = 'sending') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK ((kind = 'receipt') = (entry_id IS NOT NULL))
);

-- What a worker takes next, and what a lost worker left behind: both small, partial, and empty when all is sent.
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX mail_outbox_leased_idx ON mail_outbox (lease_expires_at) WHERE status = 'sending';

-- Receipts are queued by the database in the transaction that makes a top-up, payment or refund succeed, whichever
-- door moved it (request, webhook, reconciler): the money's commit and its receipt's row are one commit.
-- prisma/functions/mail_queue_receipt.sql is the trigger function; this placeholder lets the triggers be created
-- before the function files are applied (docs/decisions/052).
DO $$
BEGIN
  IF to_regprocedure('mail_queue_receipt()') IS NULL THEN
    CREATE FUNCTION mail_queue_receipt() RETURNS trigger LANGUAGE plpgsql
      AS $f$ BEGIN RAISE EXCEPTION 'mail_queue_receipt placeholder: function files not applied'; END $f$;
  END IF;
END
$$;

CREATE TRIGGER ledger_entries_receipt_insert
  AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.status = 'succeeded' AND NEW.type IN ('topup', 'payment', 'refund'))
  EXECUTE FUNCTION mail_queue_receipt();

CREATE TRIGGER ledger_entries_receipt_status
  AFTER UPDATE OF status ON ledger_entries
  FOR EACH ROW WHEN (
    OLD.status IS DISTINCT FROM NEW.status AND NEW.status = 'succeeded' AND NEW.type IN ('topup', 'payment', 'refund')
  )
  EXECUTE FUNCTION mail_queue_receipt();

-- The devices a user signed in from (a random id kept in a cookie, stored hashed), so that a sign-in from a new one
-- sends a notice. The first device of an account (its sign-up) is recorded without a notice.
CREATE TABLE user_devices (
  user_id       TEXT           NOT NULL REFERENCES "user" (id) ON DELETE CASCADE,
  device_hash   TEXT           NOT NULL CHECK (length(device_hash) = 64),
  first_seen_at TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, device_hash)
);
