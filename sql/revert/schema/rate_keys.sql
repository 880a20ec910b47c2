-- Revert conductor:schema/rate_keys from pg

begin;

drop table conductor.rate_key_buckets;
-- the per-key limits go with their buckets (v0.2.0's claim would read them as one bucket)
delete from conductor.rate_limits where per_key;
alter table conductor.rate_limits drop column per_key;
alter type conductor._task_spec drop attribute rate_key;
alter table conductor.tasks drop column rate_key;
alter table conductor.schedules drop column rate_key;

commit;
