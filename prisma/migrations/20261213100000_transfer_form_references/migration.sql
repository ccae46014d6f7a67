-- The wallet page's send form (contract section 15) and withdraw form (section 14) carry a server-minted reference
-- like the top-up and pay forms (case C20, docs/decisions/033-form-references.md): a stored row has the type of the
-- ledger entry that claims it, `transfer` or `payout`. Valid on PostgreSQL 15 (apt) and 18 (embedded).
ALTER TABLE form_references DROP CONSTRAINT form_references_type_check;
ALTER TABLE form_references ADD CONSTRAINT form_references_type_check
  CHECK (type IN ('topup', 'payment', 'transfer', 'payout'));
