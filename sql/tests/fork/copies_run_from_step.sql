-- fork copies a finished run as a new root task due now: the same kind, payload, queue and
-- policy, not its dedupe_key, with the steps saved before from_step in their order; the
-- source is unchanged; get_task names the source and the step. Called as conductor_client.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('order', '{"order": 7}', 'fork-copy', priority => 5, max_attempts => 3,
                         dedupe_key => 'order-7', concurrency_key => 'shop', max_recoveries => 2) as t \gset
select conductor_tests.claim_one('fork-copy') as a \gset
select conductor.save_step(:a, name, to_jsonb(name)) from unnest(array['reserve', 'charge', 'ship']) name;
select conductor.complete(:a, '{"done": true}') as c \gset
select conductor_tests.task(:t) as before \gset

create role t_fork_client;
grant conductor_client to t_fork_client;
set local role t_fork_client;
select conductor.fork(task_id => :t, from_step => 'ship') as f \gset
select is((select (forked_from, forked_at_step)::text from conductor.get_task(:f)), format('(%s,ship)', :t),
  'get_task of the copy names its source and the step it was forked from.');
select is((select (forked_from, forked_at_step)::text from conductor.get_task(:t)), '(,)', 'The source is no fork.');
reset role;

select isnt(:f::bigint, :t::bigint, 'fork returns a new task''s id.');
select is((select (kind, payload, queue, priority, max_attempts, concurrency_key, max_recoveries, status, parent_id, root_id, dedupe_key, run_at)::text
             from conductor.tasks where id = :f),
          format('(order,"{""order"": 7}",fork-copy,5,3,shop,2,queued,,%s,,"2030-01-01 00:00:00+00")', :f),
  'The copy is a new root with the source''s kind, payload, queue and policy, no dedupe_key, due now.');
select is((select array_agg(name order by seq) from conductor.steps where task_id = :f), array['reserve', 'charge'],
  'The copy carries the steps saved before ship, in their order.');
select is(conductor_tests.task(:t), :'before'::jsonb, 'The source task is unchanged.');
select is((select array_agg(name order by seq) from conductor.steps where task_id = :t), array['reserve', 'charge', 'ship'],
  'The source keeps all its steps.');
select results_eq($$select steps from conductor.claim('w2', array['fork-copy'])$$,
  $$values ('{"reserve": "reserve", "charge": "charge"}'::jsonb)$$,
  'The copy is claimed with the carried steps: it runs ship again.');

select * from finish();
rollback;
