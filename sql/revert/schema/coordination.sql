-- Revert conductor:schema/coordination from pg

BEGIN;

-- XXX Add DDLs here.

COMMIT;
