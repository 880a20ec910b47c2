-- A rolling deploy kills nothing: an old worker (kinds {A}) and a new one (kinds {A, B})
-- serve one queue; tasks of both kinds wait there far longer than unknown_kind_after
-- (5 minutes), and reap()'s unknown-kind sweep dead-letters none (B has a live worker).
begin;
select plan(3);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('old', queues => '{sweep-roll}', kinds => '{A}') as r1 \gset
select conductor.register_worker('new', queues => '{sweep-roll}', kinds => '{A,B}') as r2 \gset
select conductor.enqueue('A', '{}', 'sweep-roll') as ta \gset
select conductor.enqueue('B', '{}', 'sweep-roll') as tb \gset

-- an hour later, both workers still beat
set local conductor.fake_now = '2030-01-01 01:00:00+00';
select count(*) from conductor.heartbeat('old', '{}') \gset
select count(*) from conductor.heartbeat('new', '{}') \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select is(conductor.reap(), 0, 'reap() dead-letters nothing.');
reset role;
select isnt((select unknown_kinds_swept_at from conductor.maintenance), null,
  'The sweep ran (and found nothing to do).');
select results_eq(format($$select status::text from conductor.tasks where id in (%s, %s) order by id$$, :ta, :tb),
  $$values ('queued'), ('queued')$$,
  'Both tasks, A and B, are still queued for their workers.');

select * from finish();
rollback;
