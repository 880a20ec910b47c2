-- Revert conductor:schema/run_recoveries from pg

BEGIN;

-- XXX Add DDLs here.

COMMIT;
