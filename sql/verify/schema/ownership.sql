-- Verify conductor:schema/ownership on pg

BEGIN;

-- XXX Add verifications here.

ROLLBACK;
