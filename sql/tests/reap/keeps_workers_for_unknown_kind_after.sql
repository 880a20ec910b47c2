-- Workers rows are deleted after greatest(stale_workers_after, unknown_kind_after): the sweep
-- reads a silent worker's last_seen_at until then. served_kinds rows older than
-- unknown_kind_after are deleted.
begin;
select plan(3);
\ir ../helpers.psql
delete from conductor.workers;
delete from conductor.served_kinds;
update conductor.settings set unknown_kind_after = '30 minutes';
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('quiet', kinds => '{A}') as r1 \gset
select conductor.register_worker('leaving', kinds => '{B}') as r2 \gset
select conductor.deregister_worker('leaving') as gone \gset

set local conductor.fake_now = '2030-01-01 00:20:00+00';
select conductor.reap('15 minutes') as n \gset
select is((select count(*) from conductor.workers where id = 'quiet'), 1::bigint,
  'A worker silent for 20 minutes is kept while unknown_kind_after (30 minutes) is longer than stale_workers_after.');

set local conductor.fake_now = '2030-01-01 00:30:00.000001+00';
select conductor.reap('15 minutes') as n \gset
select is((select count(*) from conductor.workers where id = 'quiet'), 0::bigint,
  'After 30 minutes it is forgotten.');
select is((select count(*) from conductor.served_kinds where kind = 'B'), 0::bigint,
  'A served_kinds row older than unknown_kind_after is deleted.');

select * from finish();
rollback;
