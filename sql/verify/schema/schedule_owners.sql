-- Verify conductor:schema/schedule_owners on pg

BEGIN;

-- XXX Add verifications here.

ROLLBACK;
