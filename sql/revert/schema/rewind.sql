-- Revert conductor:schema/rewind from pg

begin;

drop table conductor.forks;
alter table conductor.steps drop column seq;  -- drops conductor.step_seq, which it owns

commit;
