-- Once no live worker has served a kind for unknown_kind_after (5 minutes), while a live
-- worker serves the queue, reap()'s sweep dead-letters the kind's tasks due for that long:
-- the new worker (kinds {A, B}) stopped cleanly (deregister_worker remembers when it last
-- served B), and one serving C crashed (its row goes stale). Before the boundary nothing
-- dies; a microsecond after it, B and C tasks due since then are dead, error naming the
-- kind; an A task and a B task due later stay. (Each reap here may sweep: the throttle
-- is reset; reap/unknown_kinds_sweep_is_throttled.sql tests it.)
begin;
select plan(7);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('old', queues => '{sweep-q}', kinds => '{A}') as r1 \gset
select conductor.register_worker('new', queues => '{sweep-q}', kinds => '{A,B}') as r2 \gset
select conductor.register_worker('crashed', queues => '{sweep-q}', kinds => '{C}') as r3 \gset
select conductor.enqueue('A', '{}', 'sweep-q') as ta \gset
select conductor.enqueue('B', '{}', 'sweep-q') as tb \gset
select conductor.enqueue('C', '{}', 'sweep-q') as tc \gset

set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.deregister_worker('new') as gone \gset
select count(*) from conductor.heartbeat('crashed', '{}') \gset
select conductor.enqueue('B', '{}', 'sweep-q', run_at => '2030-01-01 00:12:00+00') as tb_later \gset

create role t_worker;
grant conductor_worker to t_worker;

set local conductor.fake_now = '2030-01-01 00:14:00+00';
select count(*) from conductor.heartbeat('old', '{}') \gset
set local conductor.fake_now = '2030-01-01 00:15:00+00';
set local role t_worker;
select is(conductor.reap(), 0, 'Exactly unknown_kind_after since B and C were last served, nothing dies.');
reset role;

update conductor.maintenance set unknown_kinds_swept_at = null;
set local conductor.fake_now = '2030-01-01 00:15:00.000001+00';
set local role t_worker;
select is(conductor.reap(), 2, 'A microsecond later, reap() dead-letters the B and C tasks.');
reset role;
select is(
  (select jsonb_build_object('status', status, 'finished_at', finished_at, 'error', error)
     from conductor.tasks where id = :tb),
  jsonb_build_object('status', 'dead', 'finished_at', '2030-01-01 00:15:00.000001+00'::timestamptz,
    'error', 'no live worker has served kind ''B'' for 300 s (conductor.settings.unknown_kind_after): unknown kind?'),
  'The B task is dead, its error naming the kind and the interval.');
select is((select error from conductor.tasks where id = :tc),
  'no live worker has served kind ''C'' for 300 s (conductor.settings.unknown_kind_after): unknown kind?',
  'The C task, whose only worker went silent, is dead too.');
select is((select status::text from conductor.tasks where id = :ta), 'queued',
  'The A task, served by the live old worker, waits.');
select is((select status::text from conductor.tasks where id = :tb_later), 'queued',
  'A B task due for less than unknown_kind_after waits.');

update conductor.maintenance set unknown_kinds_swept_at = null;
set local conductor.fake_now = '2030-01-01 00:17:00.000001+00';
select count(*) from conductor.heartbeat('old', '{}') \gset
select conductor.reap() as n \gset
select is((select status::text from conductor.tasks where id = :tb_later), 'dead',
  'It dies once it has been due for unknown_kind_after.');

select * from finish();
rollback;
