-- A due task of a queue that runs as many tasks as its cap waits for a slot: why_waiting
-- says queue_cap, "queue cap reached (2 of 2 running ...)", and waiting_reasons counts it
-- there; when one finishes it is ready. Read as conductor_client.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-cap}') as r \gset
select conductor.set_queue_limit('ww-cap', 2) as s \gset
select count(*) from (select conductor.enqueue('k', '{}', 'ww-cap') from generate_series(1, 3)) e \gset
select attempt_id as a from conductor.claim('ww-w', array['ww-cap'], 10) order by task_id limit 1 \gset
select max(id) as t from conductor.tasks where queue = 'ww-cap' \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('queue_cap'::text, 'queue cap reached (2 of 2 running in queue ''ww-cap'')'::text)$$,
  'The third task waits for a slot of its queue''s cap, and says how many run.');
select results_eq($$select reason, tasks from conductor.waiting_reasons('ww-cap')$$,
  $$values ('queue_cap'::text, 1::bigint)$$, 'waiting_reasons counts it under queue_cap.');
reset role;

select conductor.complete(:a, '{}');
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'Once one finished, the task is ready.');
reset role;
select conductor_tests.claim_one('ww-cap', 'ww-w') as a2 \gset
select conductor.enqueue('k', '{}', 'ww-cap') as t4 \gset
select conductor.set_queue_limit('ww-cap') as s \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t4]::bigint[])), 'ready',
  'Without the cap, a fourth task is ready beside the two running.');
reset role;

select * from finish();
rollback;
