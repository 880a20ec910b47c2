-- enqueue_many writes a batch and answers the ids in the order of the input.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create temp table batch as
select e.id, e.n from conductor.enqueue_many($$[
  {"kind": "c", "priority": 1},
  {"kind": "a", "queue": "batch-q", "payload": {"x": 1}, "run_at": "2030-01-02T00:00:00Z", "max_attempts": 4},
  {"kind": "b", "dedupe_key": "bk", "backoff_base": "5 seconds", "backoff_factor": 1.5, "backoff_max": "1 minute"}
]$$) with ordinality as e(id, n);

select is((select array_agg(t.kind order by b.n) from batch b join conductor.tasks t on t.id = b.id),
  array['c', 'a', 'b'],
  'The ids come back in input order: the i-th id is the i-th object''s task.');
select is((select count(distinct id) from batch), 3::bigint, 'Three objects write three tasks.');

select is(
  (select jsonb_build_object('queue', queue, 'payload', payload, 'priority', priority, 'run_at', run_at,
     'max_attempts', max_attempts, 'max_recoveries', max_recoveries, 'root_id', root_id = id, 'status', status)
     from conductor.tasks where id = (select id from batch where n = 1)),
  jsonb_build_object('queue', 'default', 'payload', '{}'::jsonb, 'priority', 1,
     'run_at', '2030-01-01 00:00:00+00'::timestamptz, 'max_attempts', 1, 'max_recoveries', 3,
     'root_id', true, 'status', 'queued'),
  'A missing key takes enqueue''s default.');
select is(
  (select jsonb_build_object('queue', queue, 'payload', payload, 'run_at', run_at, 'max_attempts', max_attempts)
     from conductor.tasks where id = (select id from batch where n = 2)),
  jsonb_build_object('queue', 'batch-q', 'payload', '{"x": 1}'::jsonb,
     'run_at', '2030-01-02 00:00:00+00'::timestamptz, 'max_attempts', 4),
  'Given keys are stored.');
select is(
  (select (dedupe_key, backoff_base, backoff_factor, backoff_max)::text
     from conductor.tasks where id = (select id from batch where n = 3)),
  '(bk,00:00:05,1.5,00:01:00)',
  'dedupe_key and the backoff policy are read from the objects.');

select * from finish();
rollback;
