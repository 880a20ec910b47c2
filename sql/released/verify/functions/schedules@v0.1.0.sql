-- Verify conductor:functions/schedules on pg

begin;

set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.create_schedule('verify-schedule', '* * * * *', 'verify');
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select 1 / (count(*) = 1)::int from conductor.tick() where schedule_name = 'verify-schedule';
select 1 / (count(*) = 0)::int from conductor.tick() where schedule_name = 'verify-schedule';

rollback;
