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

rollback;
