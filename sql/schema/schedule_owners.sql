-- Deploy conductor:schema/schedule_owners to pg
-- requires: schema/owner
-- requires: schema/schedule_audit

BEGIN;

-- XXX Add DDLs here.

COMMIT;
