-- The wallet page's form references (case C20, docs/decisions/033-form-references.md): one row per user and form
-- type holds the reference the form shows, random and minted by the server in the `web:` namespace that the API
-- refuses. It is kept until a ledger entry claims it (every render and every tab shows the same one, so a
-- resubmit or a second tab is the same operation), then replaced by a conditional upsert. Not money: a user's
-- rows may go with the user. Valid on PostgreSQL 15 (apt) and 18 (embedded).
CREATE TABLE form_references (
  user_id    text NOT NULL REFERENCES "user" ("id") ON DELETE CASCADE,
  type       text NOT NULL CHECK (type IN ('topup', 'payment')),
  -- `web:` and a random UUID (lib/web/form-refs.ts); the ledger's own ref_id rule holds too.
  ref_id     text NOT NULL CHECK (ref_id ~ '^web:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
  minted_at  timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT form_references_pkey PRIMARY KEY (user_id, type)
);
