-- Deploy conductor:schema/ownership to pg
-- requires: schema/owner
-- requires: schema/fleet
-- requires: schema/operations
-- requires: schema/settings

BEGIN;

-- XXX Add DDLs here.

COMMIT;
