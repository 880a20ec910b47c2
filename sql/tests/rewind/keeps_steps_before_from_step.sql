-- rewind from step 3 of a 5-step run puts the finished run back in its queue with fresh
-- counts and only steps 1 and 2: the replay runs steps 3 to 5 again. The order is the
-- order the steps were saved in (steps.seq), not their names nor their times (all five
-- share the fake clock's instant). Called as conductor_client, to whom rewind is granted.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('run5', '{"order": 7}', 'rewind-keep') as t \gset
select conductor_tests.claim_one('rewind-keep') as a \gset
select conductor.save_step(:a, name, to_jsonb(name)) from unnest(array['e', 'd', 'c', 'b', 'a']) name;
select conductor.complete(:a, '{"done": true}') as c \gset

create role t_rewind_client;
grant conductor_client to t_rewind_client;
set local role t_rewind_client;
select is(conductor.rewind(task_id => :t, from_step => 'c'), :t::bigint, 'rewind returns the task''s id.');
reset role;

select is((select (status, attempt, recoveries, result, finished_at)::text from conductor.tasks where id = :t),
  '(queued,0,0,,)', 'The succeeded run is queued again, with fresh counts and no result.');
select is((select array_agg(name order by seq) from conductor.steps where task_id = :t), array['e', 'd'],
  'The steps saved before c are kept; c and the two saved after it are deleted.');
select results_eq($$select steps from conductor.claim('w2', array['rewind-keep'])$$,
  $$values ('{"e": "e", "d": "d"}'::jsonb)$$,
  'The replay is claimed with the first two steps: it runs c and what follows again.');
select is((select count(*) from conductor.attempts where task_id = :t), 2::bigint,
  'The first attempt stays for forensics beside the replay''s.');

-- a rewind from the first step keeps nothing
select id as a2 from conductor.attempts where task_id = :t and outcome is null \gset
select conductor.fail(:a2, 'boom') as f \gset
select is(conductor.rewind(:t, 'e'), :t::bigint, 'A failed run rewinds too.');
select is((select count(*) from conductor.steps where task_id = :t), 0::bigint,
  'A rewind from the first step keeps no step.');

select * from finish();
rollback;
