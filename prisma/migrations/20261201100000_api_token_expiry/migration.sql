-- Personal API tokens may expire (contract section 9: optional expiry). NULL: the token never expires.
-- A token is active while revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz(3);
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_expiry_after_creation CHECK (expires_at IS NULL OR expires_at > created_at);
