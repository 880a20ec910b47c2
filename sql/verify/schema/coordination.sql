-- Verify conductor:schema/coordination on pg

BEGIN;

-- XXX Add verifications here.

ROLLBACK;
