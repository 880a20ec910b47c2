-- Deploy conductor:schema/coordination to pg
-- requires: schema/owner
-- requires: schema/tasks
-- requires: schema/operations

BEGIN;

-- XXX Add DDLs here.

COMMIT;
