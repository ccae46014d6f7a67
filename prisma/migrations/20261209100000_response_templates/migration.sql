-- The payment's and the reward's success bodies (and the payment's debt body) are passed as the segments the app cut
-- at named JSON paths, filled by position (prisma/functions/ledger_fill_body.sql), instead of one text whose `{{...}}`
-- slots were searched for and replaced (docs/decisions/053). An argument's type is part of a function's signature, so
-- the old signatures are dropped here and prisma/functions/ledger_decide_payment.sql and ledger_decide_reward.sql
-- create the new ones in the same run (docs/development.md, "How to change a database function").
DROP FUNCTION IF EXISTS ledger_decide_payment(text, text, bigint, text, text, jsonb, smallint, text, smallint, text,
                                              smallint, text);
DROP FUNCTION IF EXISTS ledger_decide_reward(text, text, bigint, text, text, jsonb, text, bigint, bigint, smallint,
                                             text, smallint, text);
