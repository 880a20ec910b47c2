-- Revert conductor:schema/schedule_owners from pg

BEGIN;

-- XXX Add DDLs here.

COMMIT;
