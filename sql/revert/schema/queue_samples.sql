-- Revert conductor:schema/queue_samples from pg

begin;

alter table conductor.settings drop column retain_samples;
drop table conductor.queue_samples;
drop table conductor.sample_minutes;

commit;
