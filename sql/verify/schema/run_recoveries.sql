-- Verify conductor:schema/run_recoveries on pg

BEGIN;

-- XXX Add verifications here.

ROLLBACK;
