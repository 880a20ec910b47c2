-- Revert conductor:schema/operations from pg

begin;

delete from conductor.schedule_fires where manual;
drop index conductor.schedule_fires_by_schedule;
drop index conductor.schedule_fires_due;
alter table conductor.schedule_fires add constraint schedule_fires_pkey primary key (schedule_name, due_at);
alter table conductor.schedule_fires drop column manual;
drop table conductor.subscriptions;
drop table conductor.attempt_logs;
alter table conductor.kinds drop column retain_failed, drop column retain_succeeded;
alter table conductor.settings
  drop column max_log_bytes, drop column retain_events, drop column retain_failed, drop column retain_succeeded;
drop table conductor.rate_limits;
drop table conductor.paused_queues;

commit;
