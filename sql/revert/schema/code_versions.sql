-- Revert conductor:schema/code_versions from pg

begin;

alter type conductor.claimed_task drop attribute step_order;
alter type conductor.claimed_task drop attribute code_version;
alter table conductor.steps drop column seq;  -- and its sequence, which it owns
alter table conductor.tasks drop column code_version;

commit;
