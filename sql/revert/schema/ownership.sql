-- Revert conductor:schema/ownership from pg

BEGIN;

-- XXX Add DDLs here.

COMMIT;
