-- The admin page's mail card (lib/mail/mail-needing-attention.ts) reads the messages that will not go out by
-- themselves, `unknown` and `failed`: a small partial index, written only when a message ends that way, so the card
-- never scans the sent receipts of a whole ledger.
CREATE INDEX mail_outbox_attention_idx ON mail_outbox (id) WHERE status IN ('unknown', 'failed');
