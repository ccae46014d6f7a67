-- Cases C18, C19 (contract section 5): why an event was unusable or what its applying delivery decided, for admins.
-- Nullable, no default: existing rows keep their outcome and gain no detail.
ALTER TABLE bank_webhook_events ADD COLUMN detail text;
