-- Why a browser's session ended, when it did not end by itself: a password change revokes the user's other sessions
-- (better-auth deletes their rows), and those browsers then land on the sign-in page, which says why
-- (lib/auth/record-ended-sessions.ts, lib/auth/get-ended-session-reason.ts; docs/decisions/056). Keyed by the SHA-256
-- of the session's token (the cookie carries the token; the token itself is not kept). A row is useful only while
-- the session would still have been valid, so rows older than a session's lifetime are deleted when new ones are
-- written.
CREATE TABLE ended_sessions (
  token_hash  text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES "user" ("id") ON DELETE CASCADE,
  reason      text NOT NULL CHECK (reason IN ('password_changed')),
  ended_at    timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX ended_sessions_ended_at_idx ON ended_sessions (ended_at);
