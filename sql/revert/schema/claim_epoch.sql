-- Revert conductor:schema/claim_epoch from pg

begin;

drop table conductor.claim_epoch;

commit;
