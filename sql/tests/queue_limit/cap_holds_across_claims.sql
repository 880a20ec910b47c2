-- A queue cap of 3: claims from any number of workers start no more than 3 minus those
-- running; a task that finishes frees its slot; another queue, and the tasks of a queue
-- claimed together with the capped one, are not held back; waiting (suspended) tasks hold
-- no slot. As conductor_worker, the role that sets caps in code.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2032-07-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;

select count(*) from (select conductor.enqueue('k', jsonb_build_object('n', n), 'ql-capped')
                        from generate_series(1, 10) n) e \gset
select count(*) from (select conductor.enqueue('k', '{}', 'ql-free') from generate_series(1, 5) n) e \gset
set local role t_worker;
select conductor.set_queue_limit('ql-capped', 3) as s \gset
reset role;

select is((select count(*) from conductor.claim('w1', array['ql-capped'], 2)), 2::bigint,
  'A claim of 2 under a cap of 3 starts 2.');
select is((select count(*) from conductor.claim('w2', array['ql-capped'], 10)), 1::bigint,
  'Another worker''s claim of 10 starts only the one slot left.');
select is((select count(*) from conductor.claim('w3', array['ql-capped'], 10)), 0::bigint,
  'A third worker starts nothing while 3 run.');
select is((select array_agg(queue order by queue) from conductor.claim('w3', array['ql-capped', 'ql-free'], 10)),
  array_fill('ql-free'::text, array[5]),
  'A claim of both queues takes the other queue''s 5 and none of the full one''s.');

select attempt_id as a1 from conductor.tasks where queue = 'ql-capped' and status = 'running' order by id limit 1 \gset
select conductor.complete(:a1, '{}') as c \gset
select is((select array_agg((payload->>'n')::int) from conductor.claim('w3', null, 10)), array[4],
  'A finished task frees one slot: a claim of every queue starts the next task in order, one.');
select is((select count(*) from conductor.tasks where queue = 'ql-capped' and status = 'running'), 3::bigint,
  'Three run.');

-- a suspended task frees its slot
select attempt_id as a2 from conductor.tasks where queue = 'ql-capped' and status = 'running' order by id limit 1 \gset
select count(*) from conductor.suspend(:a2, 'nap', 'sleep', duration => interval '1 hour') s \gset
select is((select count(*) from conductor.claim('w1', array['ql-capped'], 10)), 1::bigint,
  'A task suspended (waiting) holds no slot: one more starts.');

-- lowering the cap under what runs stops nothing, starts nothing
select conductor.set_queue_limit('ql-capped', 1) as s \gset
select is((select count(*) from conductor.tasks where queue = 'ql-capped' and status = 'running'), 3::bigint,
  'Lowering the cap to 1 stops none of the 3 running.');
select is((select count(*) from conductor.claim('w1', array['ql-capped'], 10)), 0::bigint,
  'And starts none until fewer than 1 run.');

select * from finish();
rollback;
