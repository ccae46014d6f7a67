-- The reward cap in PostgreSQL (docs/decisions/016-reward-cap-in-postgresql.md): one row per user and
-- reward day with the rewards credited that day, raised in the reward's own transaction by
-- `INSERT ... ON CONFLICT DO UPDATE ... WHERE credited_minor + $amount <= $cap RETURNING` (a conditional update
-- under the row's lock, never a SUM two concurrent credits could both pass). Redis stays the fast reservation in
-- front; this row holds the cap when a Redis failover hands back a counter below the truth.
-- Valid on PostgreSQL 15 (apt) and 18 (embedded).
CREATE TABLE reward_cap_days (
  user_id         text NOT NULL REFERENCES "user" ("id") ON DELETE RESTRICT,
  -- The reward day in REWARD_TZ, as in the reward's ref id and params (contract section 6).
  day             text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  credited_minor  bigint NOT NULL CHECK (credited_minor >= 0 AND credited_minor < 9007199254740992),
  updated_at      timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT reward_cap_days_pkey PRIMARY KEY (user_id, day)
);

-- Rewards credited before this migration count too.
INSERT INTO reward_cap_days (user_id, day, credited_minor)
SELECT user_id, params->>'day', sum(amount_minor)
  FROM ledger_entries
 WHERE type = 'reward' AND status = 'succeeded'
 GROUP BY user_id, params->>'day';
