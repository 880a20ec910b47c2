-- waiting_reasons counts per queue the queued tasks under their first reason (why_waiting's
-- order: queue_paused, due_later, no_worker, rate_limited, concurrency_key, else ready),
-- with the earliest run_at; one queue when named. Read as conductor_client.
begin;
select plan(3);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('wr-w', queues => '{wr-1, wr-2}', kinds => '{k}') as r \gset
select conductor.enqueue('k', '{}', 'wr-1', concurrency_key => 'wr-key') as held \gset
select conductor_tests.claim_one('wr-1', 'wr-w') as a \gset
select conductor.enqueue('k', '{}', 'wr-1', concurrency_key => 'wr-key') as x \gset
select conductor.enqueue('k', '{}', 'wr-1', concurrency_key => 'wr-key') as x \gset
select conductor.enqueue('k', '{}', 'wr-1') as x \gset
select conductor.enqueue('k', '{}', 'wr-1', run_at => '2030-01-01 01:00:00+00') as x \gset
select conductor.enqueue('unknown', '{}', 'wr-1') as x \gset
select conductor.enqueue('k', '{}', 'wr-2') as x \gset
select conductor.enqueue('k', '{}', 'wr-2', run_at => '2030-01-01 01:00:00+00') as x \gset
select conductor.pause_queue('wr-2') as p \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq($$select queue, reason, tasks from conductor.waiting_reasons() where queue like 'wr-%'$$,
  $$values ('wr-1'::text, 'concurrency_key'::text, 2::bigint), ('wr-1', 'due_later', 1), ('wr-1', 'no_worker', 1),
           ('wr-1', 'ready', 1), ('wr-2', 'queue_paused', 2)$$,
  'Each queued task is counted once, under its first reason; the paused queue''s due-later task under the pause.');
select results_eq($$select reason, oldest_run_at from conductor.waiting_reasons('wr-1') where reason = 'due_later'$$,
  $$values ('due_later'::text, '2030-01-01 01:00:00+00'::timestamptz)$$,
  'A queue named alone; each reason with the earliest run_at of its tasks.');
select is_empty($$select * from conductor.waiting_reasons('wr-empty')$$, 'A queue with no queued task answers no row.');
reset role;

select * from finish();
rollback;
