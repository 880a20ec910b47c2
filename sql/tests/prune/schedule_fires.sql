-- The schedule fire of a pruned task goes with it when its due time is behind the
-- schedule's next due time (it cannot fire again); the schedule stays.
begin;
select plan(4);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:30+00';
select conductor.create_schedule(name => 'pr-sched', cron => '* * * * *', kind => 'k', queue => 'pr-s') is not null;
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select task_id as fired from conductor.tick() \gset
select conductor.complete(conductor_tests.claim_one('pr-s'), '{}');
set local conductor.fake_now = '2030-02-01 00:00:00+00';

select is((select count(*) from conductor.schedule_fires where task_id = :fired), 1::bigint,
  'The fire row names its task before the prune.');
select is(conductor.prune(interval '7 days'), 1::bigint, 'The fired task is pruned.');
select is((select count(*) from conductor.schedule_fires where schedule_name = 'pr-sched'), 0::bigint,
  'Its fire row, behind the schedule''s next due time, is gone.');
select is((select count(*) from conductor.schedules where name = 'pr-sched'), 1::bigint,
  'The schedule itself stays.');

select * from finish();
rollback;
