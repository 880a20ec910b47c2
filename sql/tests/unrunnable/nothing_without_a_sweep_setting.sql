-- With unknown_kind_after NULL, unrunnable() still lists what no live worker (seen within
-- 5 minutes) can run, but nothing will be dead-lettered (dead_letter_at NULL). A worker
-- without kinds on a queue leaves nothing unrunnable there.
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.settings set unknown_kind_after = null;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-a', queues => '{urn-1}', kinds => '{A}') as r \gset
select conductor.register_worker('w-all', queues => '{urn-2}') as r \gset
select conductor.enqueue('B', '{}', 'urn-1') as x \gset
select conductor.enqueue('B', '{}', 'urn-2') as x \gset

select results_eq($$select queue, kind, tasks, dead_letter_at from conductor.unrunnable() where queue like 'urn-%'$$,
  $$values ('urn-1'::text, 'B'::text, 1::bigint, null::timestamptz)$$,
  'The B task of urn-1 is listed, never to be dead-lettered.');
select is((select count(*) from conductor.unrunnable() where queue = 'urn-2'), 0::bigint,
  'urn-2, served by a worker without kinds, has nothing unrunnable.');

select * from finish();
rollback;
