-- Verify conductor:functions/schedules on pg

begin;

update conductor.settings set fake_clock = true;  -- rolled back with the rest
set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.create_schedule('verify-schedule', '* * * * *', 'verify');
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select 1 / (count(*) = 1)::int from conductor.tick() where schedule_name = 'verify-schedule';
select 1 / (count(*) = 0)::int from conductor.tick() where schedule_name = 'verify-schedule';
select 1 / (declared_by = 'admin' and changed_by = session_user::text)::int
  from conductor.schedules where name = 'verify-schedule';
-- a schedule that cannot fire does not stop the others; its error is recorded
select conductor.create_schedule('verify-schedule-bad', '* * * * *', 'verify');
update conductor.schedules set kind = ' bad' where name = 'verify-schedule-bad';
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select 1 / (count(*) = 1)::int from conductor.tick() where schedule_name = 'verify-schedule';
select 1 / (last_error like 'QC101:%')::int from conductor.schedules where name = 'verify-schedule-bad';
-- Run now: a manual fire, the next due time untouched; then overdue schedules
select conductor.fire_schedule('verify-schedule') as fired \gset
select 1 / (count(*) = 1)::int from conductor.schedule_fires
 where schedule_name = 'verify-schedule' and manual and task_id = :fired;
select 1 / (next_due_at = '2030-01-01 00:03:00+00' and last_fired_at = '2030-01-01 00:02:00+00')::int
  from conductor.list_schedules() where name = 'verify-schedule';
set local conductor.fake_now = '2030-01-01 00:05:00+00';
select 1 / (count(*) = 1)::int from conductor.overdue_schedules() where name = 'verify-schedule';
-- after downtime a schedule fires once, then continues from the next future time
select conductor.create_schedule('verify-schedule-5s', '*/5 * * * * *', 'verify');
set local conductor.fake_now = '2030-01-01 00:08:36+00';
select 1 / (count(*) = 1)::int from conductor.tick() where schedule_name = 'verify-schedule-5s';
select 1 / (next_due_at = '2030-01-01 00:08:40+00')::int from conductor.schedules where name = 'verify-schedule-5s';
-- the declaring login owns a schedule; the owner's check is the one rule
select 1 / (owner = session_user::text)::int from conductor.list_schedules() where name = 'verify-schedule';
select 1 / (pg_catalog.pg_get_functiondef('conductor.create_schedule(text, text, text, jsonb, text, text, integer, '
            'integer, text, text, text, integer, boolean, boolean, integer, interval, text)'::regprocedure) like '%conductor._check_owner(%')::int;
select 1 / pg_catalog.has_function_privilege('conductor_admin', 'conductor.fire_schedule(text)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor.fire_schedule(text)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.overdue_schedules(interval)', 'execute')::int;

rollback;
