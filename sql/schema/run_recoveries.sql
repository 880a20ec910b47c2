-- Deploy conductor:schema/run_recoveries to pg
-- requires: schema/owner
-- requires: schema/tasks

BEGIN;

-- XXX Add DDLs here.

COMMIT;
