-- Books that balance (docs/decisions/058-double-entry-books.md; contract section 13): every movement of money is a
-- journal transaction of postings that sum to zero, written by the statement that moves the wallet.
--
-- ledger_accounts       the chart of accounts: `wallet` (each user's own; its balance is the wallet's balance minus
--                       its debt: a debt is a negative wallet account) and the house accounts, one per counter-party
-- ledger_journal_rules  which two accounts each kind of movement moves money between: the one place of that rule,
--                       read by prisma/functions/ledger_journal.sql and by the backfill below
-- ledger_postings       append-only; one journal transaction is the postings of one (user_id, entry_id, event)
--
-- House accounts keep no balance row: their balance is the sum of their postings (the partial index below), so no
-- movement updates a row that every other movement updates too (no hot row).
CREATE TABLE ledger_accounts (
  name        text PRIMARY KEY CHECK (name ~ '^[a-z_]{1,40}$'),
  -- `user`: one per user (postings carry the user); `house`: the platform's own.
  kind        text NOT NULL CHECK (kind IN ('user', 'house')),
  -- The side its balance is normally on: an asset (`debit`) is shown as minus the sum of its postings.
  normal_side text NOT NULL CHECK (normal_side IN ('debit', 'credit')),
  description text NOT NULL
);

INSERT INTO ledger_accounts (name, kind, normal_side, description) VALUES
  ('wallet', 'user', 'credit', 'what the platform owes each user: the wallet''s balance, or minus its debt'),
  ('bank_clearing', 'house', 'debit',
   'money the bank holds for the platform: charges succeeded, minus refunds succeeded, minus disputes lost and not reversed'),
  ('refunds_in_flight', 'house', 'credit', 'refunds reserved from wallets and not yet finished at the bank'),
  ('rewards_funded', 'house', 'debit', 'rewards the platform has paid into wallets'),
  ('merchants_payable', 'house', 'credit', 'payments made from wallets, owed to the merchants paid');

CREATE TABLE ledger_journal_rules (
  type         text NOT NULL,
  -- `move`: the entry's one movement; a refund's three: `reserve` at its claim, then `settle` (the bank refunded) or
  -- `release` (the bank failed it: the reservation goes back to the wallet).
  event        text NOT NULL CHECK (event IN ('move', 'reserve', 'settle', 'release')),
  from_account text NOT NULL REFERENCES ledger_accounts (name),
  to_account   text NOT NULL REFERENCES ledger_accounts (name),
  PRIMARY KEY (type, event),
  CHECK (from_account <> to_account)
);

INSERT INTO ledger_journal_rules (type, event, from_account, to_account) VALUES
  ('topup', 'move', 'bank_clearing', 'wallet'),
  ('adjustment', 'move', 'bank_clearing', 'wallet'),
  ('reward', 'move', 'rewards_funded', 'wallet'),
  ('payment', 'move', 'wallet', 'merchants_payable'),
  ('chargeback', 'move', 'wallet', 'bank_clearing'),
  ('chargeback_reversal', 'move', 'bank_clearing', 'wallet'),
  ('refund', 'reserve', 'wallet', 'refunds_in_flight'),
  ('refund', 'settle', 'refunds_in_flight', 'bank_clearing'),
  ('refund', 'release', 'refunds_in_flight', 'wallet');

CREATE TABLE ledger_postings (
  -- Global and increasing: within one wallet account (written under the wallet's lock) it is the account's order.
  id                  bigint GENERATED ALWAYS AS IDENTITY,
  -- The user whose movement this is, on every leg (the house leg too): the rows of a movement stay with its user.
  user_id             text NOT NULL,
  entry_id            bigint NOT NULL,
  event               text NOT NULL,
  -- No foreign key to ledger_accounts: it would lock the house account's row from every movement (a hot row).
  -- Accounts come from ledger_journal_rules, which has one; the audit checks them too.
  account             text NOT NULL,
  -- Signed: what the account gains. The legs of one transaction sum to zero.
  amount_minor        bigint NOT NULL CHECK (amount_minor <> 0),
  currency            text NOT NULL,
  -- On `wallet` legs only: the account's balance after this posting (the wallet's balance minus its debt).
  balance_after_minor bigint,
  posted_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT ledger_postings_pkey PRIMARY KEY (user_id, entry_id, event, account),
  CONSTRAINT ledger_postings_entry_fkey FOREIGN KEY (user_id, entry_id)
    REFERENCES ledger_entries (user_id, id) ON DELETE RESTRICT,
  CHECK ((account = 'wallet') = (balance_after_minor IS NOT NULL))
);

-- A wallet's statement, its balance at an instant (one read: the newest posting at or before it) and its running
-- balance; the wallet's own legs only.
CREATE INDEX ledger_postings_wallet_idx ON ledger_postings (user_id, posted_at, id)
  INCLUDE (amount_minor, balance_after_minor) WHERE account = 'wallet';
-- A house account's postings and balance (an index-only sum); appended at its right edge, never a row updated.
CREATE INDEX ledger_postings_house_idx ON ledger_postings (account, posted_at, id)
  INCLUDE (amount_minor) WHERE account <> 'wallet';

-- Append-only, like the transitions (prisma/functions/ledger_append_only.sql): a correction is a new transaction.
-- The placeholder lets the trigger exist before the function files are applied (docs/decisions/052). The
-- transitions' trigger moves to the same function in the next migration, in a transaction of its own: its
-- DROP TRIGGER locks ledger_transitions against reads, which must not last as long as this backfill.
DO $$
BEGIN
  IF to_regprocedure('ledger_append_only()') IS NULL THEN
    CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql
      AS $f$ BEGIN RAISE EXCEPTION 'ledger_append_only placeholder: function files not applied'; END $f$;
  END IF;
END
$$;
CREATE TRIGGER ledger_postings_no_update_delete
  BEFORE UPDATE OR DELETE ON ledger_postings
  FOR EACH ROW EXECUTE FUNCTION ledger_append_only();

-- The wallet's credit and debits now take the entry (and the event) they move money for, and write its journal
-- transaction; their callers change with them in the function files of this release.
DROP FUNCTION IF EXISTS ledger_credit_wallet(text, bigint, text);
DROP FUNCTION IF EXISTS ledger_debit_wallet(text, bigint);
DROP FUNCTION IF EXISTS ledger_debit_into_debt(text, bigint, text);

-- The existing ledger's journal: every money-moving event of every entry, at the time it moved (the transition's
-- time; a refund's reservation at its claim), each wallet leg with the running balance in that order. Writers are
-- held off while it runs (the upgrade stops the app first: docs/decisions/058 and its measured time on 1M entries).
LOCK TABLE wallets, ledger_entries IN SHARE MODE;

INSERT INTO ledger_postings (user_id, entry_id, event, account, amount_minor, currency, balance_after_minor, posted_at)
WITH moved AS (
  SELECT e.user_id, e.id AS entry_id, e.type, e.amount_minor, e.currency, v.event, v.event_order,
         COALESCE(v.at, e.updated_at) AS at
    FROM ledger_entries e
    CROSS JOIN LATERAL (
      SELECT 'move' AS event, 1 AS event_order, e.status AS wanted_status
       WHERE e.type <> 'refund' AND e.status = 'succeeded'
      UNION ALL
      SELECT 'reserve', 0, 'initiated'
       WHERE e.type = 'refund' AND (e.status <> 'failed' OR e.failure_reason = 'declined_by_bank')
      UNION ALL
      SELECT 'settle', 1, 'succeeded' WHERE e.type = 'refund' AND e.status = 'succeeded'
      UNION ALL
      SELECT 'release', 1, 'failed' WHERE e.type = 'refund' AND e.status = 'failed'
         AND e.failure_reason = 'declined_by_bank'
    ) w
    CROSS JOIN LATERAL (
      SELECT w.event, w.event_order,
             (SELECT min(t.at) FROM ledger_transitions t
               WHERE t.user_id = e.user_id AND t.entry_id = e.id AND t.to_status = w.wanted_status) AS at
    ) v
), legs AS (
  SELECT m.user_id, m.entry_id, m.event, m.event_order, m.currency, m.at, leg.account, leg.amount_minor, leg.leg_order
    FROM moved m
    JOIN ledger_journal_rules r ON r.type = m.type AND r.event = m.event
    CROSS JOIN LATERAL (VALUES (r.from_account, -m.amount_minor, 0), (r.to_account, m.amount_minor, 1))
                    AS leg(account, amount_minor, leg_order)
)
SELECT user_id, entry_id, event, account, amount_minor, currency,
       CASE WHEN account = 'wallet'
            THEN SUM(amount_minor) FILTER (WHERE account = 'wallet')
                   OVER (PARTITION BY user_id ORDER BY at, entry_id, event_order ROWS UNBOUNDED PRECEDING)
       END AS balance_after_minor,
       at AS posted_at
  FROM legs
 ORDER BY at, entry_id, event_order, leg_order;
