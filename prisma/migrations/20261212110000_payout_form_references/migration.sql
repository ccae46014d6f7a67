-- The wallet page's withdraw form carries a server-minted reference like the top-up and pay forms (case C20,
-- docs/decisions/033-form-references.md): its form type is `payout`, the ledger type its reference claims.
ALTER TABLE form_references DROP CONSTRAINT form_references_type_check;
ALTER TABLE form_references ADD CONSTRAINT form_references_type_check
  CHECK (type IN ('topup', 'payment', 'payout'));
