-- Initial schema. Plain SQL because Prisma's migrate engine cannot run on these machines
-- (docs/development.md note 1); prisma/schema.prisma mirrors it and tests/integration/schema-drift.test.ts
-- fails when the two disagree. Valid on PostgreSQL 15 (apt) and 18 (embedded).

-- ---------------------------------------------------------------------------------------------
-- Accounts: the tables better-auth expects (camelCase quoted columns are its convention).
-- ---------------------------------------------------------------------------------------------
CREATE TABLE "user" (
  "id"            text PRIMARY KEY,
  "name"          text NOT NULL,
  "email"         text NOT NULL,
  "emailVerified" boolean NOT NULL DEFAULT false,
  "image"         text,
  "role"          text NOT NULL DEFAULT 'user' CHECK ("role" IN ('user', 'admin')),
  "createdAt"     timestamptz(3) NOT NULL DEFAULT now(),
  "updatedAt"     timestamptz(3) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX "user_email_key" ON "user" ("email");

CREATE TABLE "session" (
  "id"        text PRIMARY KEY,
  "expiresAt" timestamptz(3) NOT NULL,
  "token"     text NOT NULL,
  "createdAt" timestamptz(3) NOT NULL DEFAULT now(),
  "updatedAt" timestamptz(3) NOT NULL DEFAULT now(),
  "ipAddress" text,
  "userAgent" text,
  "userId"    text NOT NULL REFERENCES "user" ("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "session_token_key" ON "session" ("token");
CREATE INDEX "session_userId_idx" ON "session" ("userId");

CREATE TABLE "account" (
  "id"                    text PRIMARY KEY,
  "accountId"             text NOT NULL,
  "providerId"            text NOT NULL,
  "userId"                text NOT NULL REFERENCES "user" ("id") ON DELETE CASCADE,
  "accessToken"           text,
  "refreshToken"          text,
  "idToken"               text,
  "accessTokenExpiresAt"  timestamptz(3),
  "refreshTokenExpiresAt" timestamptz(3),
  "scope"                 text,
  "password"              text,
  "createdAt"             timestamptz(3) NOT NULL DEFAULT now(),
  "updatedAt"             timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX "account_userId_idx" ON "account" ("userId");

CREATE TABLE "verification" (
  "id"         text PRIMARY KEY,
  "identifier" text NOT NULL,
  "value"      text NOT NULL,
  "expiresAt"  timestamptz(3) NOT NULL,
  "createdAt"  timestamptz(3) NOT NULL DEFAULT now(),
  "updatedAt"  timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX "verification_identifier_idx" ON "verification" ("identifier");

CREATE TABLE "rateLimit" (
  "id"          text PRIMARY KEY,
  "key"         text NOT NULL,
  "count"       integer NOT NULL,
  "lastRequest" bigint NOT NULL
);
CREATE UNIQUE INDEX "rateLimit_key_key" ON "rateLimit" ("key");

-- Personal API tokens (contract section 4): 32 random bytes shown once, stored as SHA-256 only.
-- Checked by one indexed SELECT per request and never written on use (no last-used column on purpose).
CREATE TABLE api_tokens (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES "user" ("id") ON DELETE CASCADE,
  name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  prefix      text NOT NULL,
  token_hash  text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now(),
  revoked_at  timestamptz(3)
);
CREATE UNIQUE INDEX api_tokens_token_hash_key ON api_tokens (token_hash);
CREATE INDEX api_tokens_user_id_idx ON api_tokens (user_id);

-- ---------------------------------------------------------------------------------------------
-- Money. Every unique index on wallets and ledger tables leads with user_id, so the schema can be
-- distributed by user (docs/scaling.md) and every claim and credit stays a single-shard transaction.
-- ---------------------------------------------------------------------------------------------

-- One wallet per user. 9007199254740992 = 2^53: above it a JSON number loses integer precision,
-- and every balance is sent as a JSON integer (contract section 1).
CREATE TABLE wallets (
  user_id        text PRIMARY KEY REFERENCES "user" ("id") ON DELETE RESTRICT,
  balance_minor  bigint NOT NULL DEFAULT 0,
  currency       text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at     timestamptz(3) NOT NULL DEFAULT now(),
  updated_at     timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT wallets_balance_range CHECK (balance_minor >= 0 AND balance_minor < 9007199254740992)
);

-- One row per movement of money, claimed before any work starts (contract sections 1 and 2).
CREATE TABLE ledger_entries (
  user_id           text NOT NULL REFERENCES "user" ("id") ON DELETE RESTRICT,
  id                bigint GENERATED ALWAYS AS IDENTITY,
  type              text NOT NULL CHECK (type IN ('topup', 'reward', 'payment')),
  ref_id            text NOT NULL CHECK (ref_id ~ '^[A-Za-z0-9._:-]{1,128}$'),
  amount_minor      bigint NOT NULL CHECK (amount_minor > 0 AND amount_minor < 9007199254740992),
  currency          text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- SHA-256 (hex) of the canonical parameters; params keeps them to name the fields that differ.
  fingerprint       text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  params            jsonb NOT NULL,
  status            text NOT NULL DEFAULT 'initiated'
                      CHECK (status IN ('initiated', 'processing', 'succeeded', 'failed')),
  failure_reason    text,
  -- The first response, exactly as sent: status code and body text (contract section 3).
  response_status   smallint CHECK (response_status BETWEEN 100 AND 599),
  response_body     text,
  -- Who is working on the row (lease) and the fencing token (attempt) that makes a taken-over
  -- worker's late writes no-ops (contract section 2).
  lease_owner       text,
  lease_expires_at  timestamptz(3),
  attempt           integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
  bank_charge_id    text,
  created_at        timestamptz(3) NOT NULL DEFAULT now(),
  updated_at        timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT ledger_entries_pkey PRIMARY KEY (user_id, id),
  CONSTRAINT ledger_entries_response_pair CHECK ((response_status IS NULL) = (response_body IS NULL)),
  CONSTRAINT ledger_entries_terminal_has_no_lease
    CHECK (status IN ('initiated', 'processing') OR (lease_owner IS NULL AND lease_expires_at IS NULL)),
  CONSTRAINT ledger_entries_failed_has_reason CHECK ((status = 'failed') = (failure_reason IS NOT NULL))
);
-- The claim index: ON CONFLICT (user_id, type, ref_id) resolves against it, and the error classifier
-- treats a 23505 as "already claimed" only when it names this index (contract section 8).
CREATE UNIQUE INDEX ledger_entries_user_id_type_ref_id_key ON ledger_entries (user_id, type, ref_id);
-- A bank charge belongs to exactly one top-up; a 23505 here is a bug, never a replay.
CREATE UNIQUE INDEX ledger_entries_user_id_bank_charge_id_key ON ledger_entries (user_id, bank_charge_id);
-- Statement and top-up lists, newest first.
CREATE INDEX ledger_entries_user_id_created_at_idx ON ledger_entries (user_id, created_at DESC, id DESC);
-- The reconciler's scan: only unfinished rows, which stay few, so the index stays small at any ledger size.
CREATE INDEX ledger_entries_unfinished_idx ON ledger_entries (lease_expires_at)
  WHERE status IN ('initiated', 'processing');

-- Append-only history of every status transition (contract section 2).
CREATE TABLE ledger_transitions (
  id           bigint GENERATED ALWAYS AS IDENTITY,
  user_id      text NOT NULL,
  entry_id     bigint NOT NULL,
  from_status  text CHECK (from_status IN ('initiated', 'processing', 'succeeded', 'failed')),
  to_status    text NOT NULL CHECK (to_status IN ('initiated', 'processing', 'succeeded', 'failed')),
  actor        text NOT NULL CHECK (actor IN ('request', 'webhook', 'reconciler', 'admin')),
  attempt      integer NOT NULL,
  detail       text,
  at           timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT ledger_transitions_pkey PRIMARY KEY (user_id, id),
  CONSTRAINT ledger_transitions_entry_fkey FOREIGN KEY (user_id, entry_id)
    REFERENCES ledger_entries (user_id, id) ON DELETE RESTRICT
);
CREATE INDEX ledger_transitions_user_id_entry_id_idx ON ledger_transitions (user_id, entry_id, id);

CREATE FUNCTION ledger_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_transitions is append-only' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER ledger_transitions_no_update_delete
  BEFORE UPDATE OR DELETE ON ledger_transitions
  FOR EACH ROW EXECUTE FUNCTION ledger_transitions_append_only();

-- Every webhook event the bank delivered, once per event id, with what the app did with it.
CREATE TABLE bank_webhook_events (
  event_id       text PRIMARY KEY,
  type           text NOT NULL,
  merchant_ref   text,
  charge_id      text,
  amount_minor   bigint,
  currency       text,
  outcome        text NOT NULL,
  deliveries     integer NOT NULL DEFAULT 1,
  payload        text NOT NULL,
  first_seen_at  timestamptz(3) NOT NULL DEFAULT now(),
  last_seen_at   timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX bank_webhook_events_merchant_ref_idx ON bank_webhook_events (merchant_ref);
