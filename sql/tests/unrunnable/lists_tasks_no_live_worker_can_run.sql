-- unrunnable() lists, per queue and kind, the queued tasks no live worker (seen within
-- unknown_kind_after) can run, and when reap()'s sweep may dead-letter the oldest: its run_at
-- or the kind's last service, whichever is later, plus unknown_kind_after; NULL when the
-- sweep will not (no live worker on the queue, the kind served by a live worker elsewhere,
-- unknown_kind_after NULL). Read as conductor_client, the role stats is granted to.
begin;
select plan(5);
\ir ../helpers.psql
delete from conductor.workers;
delete from conductor.served_kinds;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-a', queues => '{ur-1}', kinds => '{A}') as r \gset
select conductor.enqueue('A', '{}', 'ur-1') as x \gset
select conductor.enqueue('B', '{}', 'ur-1') as x \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.enqueue('B', '{}', 'ur-1') as x \gset
select conductor.enqueue('B', '{}', 'ur-1', run_at => '2030-01-02 00:00:00+00') as x \gset
select conductor.enqueue('A', '{}', 'ur-nobody') as x \gset
select conductor.enqueue('C', '{}', 'ur-1') as x \gset
select conductor.register_worker('w-c', queues => '{ur-far}', kinds => '{C}') as r \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq($$select queue, kind, tasks, oldest_run_at, dead_letter_at from conductor.unrunnable()
                     where queue like 'ur-%'$$,
  $$values ('ur-1'::text, 'B'::text, 3::bigint, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:05:00+00'::timestamptz),
           ('ur-1', 'C', 1, '2030-01-01 00:01:00+00', null),
           ('ur-nobody', 'A', 1, '2030-01-01 00:01:00+00', null)$$,
  'B waits on ur-1 (dead-lettered 5 minutes after the oldest was due); C is served on another queue; ur-nobody has no worker.');
reset role;

-- a worker that served B deregistered at 00:03: the sweep waits 5 minutes from then
set local conductor.fake_now = '2030-01-01 00:03:00+00';
select conductor.register_worker('w-b', queues => '{ur-1}', kinds => '{B}') as r \gset
set local role t_client;
select is_empty($$select * from conductor.unrunnable() where queue = 'ur-1' and kind = 'B'$$,
  'While a worker serving B on ur-1 lives, no B task is unrunnable.');
reset role;
select conductor.deregister_worker('w-b') as d \gset
set local role t_client;
select is((select dead_letter_at from conductor.unrunnable() where queue = 'ur-1' and kind = 'B'),
  '2030-01-01 00:08:00+00'::timestamptz,
  'Once it left, B tasks are dead-lettered 5 minutes after it last served B.');
reset role;

-- the workers went quiet 10 minutes ago: nobody is live, every queued task is unrunnable
set local conductor.fake_now = '2030-01-01 00:13:00+00';
select is((select sum(tasks) from conductor.unrunnable() where queue like 'ur-%'), 6::numeric,
  'With no live worker, every queued task is unrunnable...');
select is((select count(*) from conductor.unrunnable() where queue like 'ur-%' and dead_letter_at is not null),
  0::bigint, '...and none will be dead-lettered: no live worker serves their queues.');

select * from finish();
rollback;
