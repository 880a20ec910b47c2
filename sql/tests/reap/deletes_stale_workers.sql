-- reap forgets workers not seen for stale_workers_after (15 minutes by default).
begin;
select plan(4);
\ir ../helpers.psql

delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('w-old') as r1 \gset
set local conductor.fake_now = '2030-01-01 00:05:00+00';
select conductor.register_worker('w-new') as r2 \gset

set local conductor.fake_now = '2030-01-01 00:15:00+00';
select conductor.reap() as n \gset
select set_eq('select id from conductor.workers', $$values ('w-old'), ('w-new')$$,
  'A worker seen exactly 15 minutes ago is kept.');

set local conductor.fake_now = '2030-01-01 00:15:00.000001+00';
select conductor.reap() as n \gset
select set_eq('select id from conductor.workers', $$values ('w-new')$$,
  'A worker not seen for more than 15 minutes is deleted; a recent one stays.');

select is(conductor.reap('1 minute'), 0, 'reap answers the count of tasks only, not of workers.');
select is_empty('select id from conductor.workers',
  'stale_workers_after sets the age: with 1 minute the other worker goes too.');

select * from finish();
rollback;
