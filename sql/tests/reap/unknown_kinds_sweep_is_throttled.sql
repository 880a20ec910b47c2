-- The unknown-kind sweep reads every queued task, so it runs at most once per
-- min(unknown_kind_after / 5, 1 minute) across all reapers: the reaper that moves
-- conductor.maintenance.unknown_kinds_swept_at sweeps, the others within the period do not,
-- and none waits for a sweep another is running (its row locked: skipped).
begin;
select plan(6);
\ir ../helpers.psql
create extension if not exists dblink;
delete from conductor.workers;
update conductor.settings set unknown_kind_after = '2 minutes';  -- period: 24 s
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('old', queues => '{sweep-thr}', kinds => '{A}') as r1 \gset
select conductor.enqueue('typo-1', '{}', 'sweep-thr') as t1 \gset
set local conductor.fake_now = '2030-01-01 00:02:00.000001+00';
select count(*) from conductor.heartbeat('old', '{}') \gset

-- a sweep in progress elsewhere: another session holds the maintenance row
select dblink_connect('sweeper', conductor_tests.conninfo()) as c \gset
select dblink_exec('sweeper', 'begin') as b \gset
select count(*) from dblink('sweeper', 'select one from conductor.maintenance for update') as l(one boolean) \gset
set local lock_timeout = '2s';
select lives_ok('select conductor.reap()',
  'A reaper does not wait for the row another sweeper holds (no lock timeout)...');
select is((select status::text from conductor.tasks where id = :t1), 'queued',
  '...and leaves the sweep to it.');
select dblink_exec('sweeper', 'rollback') as r \gset
select dblink_disconnect('sweeper') as d \gset
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left

select is(conductor.reap(), 1, 'The next reap sweeps: the task of an unknown kind is dead.');
select is((select unknown_kinds_swept_at from conductor.maintenance), '2030-01-01 00:02:00.000001+00'::timestamptz,
  'It recorded when it swept.');

-- another unknown kind, due long enough, appears right after
select conductor.enqueue('typo-2', '{}', 'sweep-thr', run_at => '2030-01-01 00:00:00+00') as t2 \gset
set local conductor.fake_now = '2030-01-01 00:02:20+00';
select conductor.reap() as n \gset
select is((select status::text from conductor.tasks where id = :t2), 'queued',
  'A reap 20 s later (within the 24 s period) does not sweep.');

set local conductor.fake_now = '2030-01-01 00:02:24.000001+00';
select conductor.reap() as n \gset
select is((select status::text from conductor.tasks where id = :t2), 'dead',
  'The first reap after the period sweeps again.');

select * from finish();
rollback;
