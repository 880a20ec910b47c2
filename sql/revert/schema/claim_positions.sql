-- Revert conductor:schema/claim_positions from pg

begin;

drop table conductor.claim_positions;

commit;
