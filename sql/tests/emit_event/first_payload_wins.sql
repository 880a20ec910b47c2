-- The first payload emitted for a name wins: a second emit keeps it, and its waiters get it.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.emit_event('emit-first', '{"n": 1}') as e1 \gset
set local conductor.fake_now = '2030-01-01 00:00:05+00';
select conductor.enqueue('k', '{}', 'emit-first') as t \gset
select conductor_tests.claim_one('emit-first') as a \gset
select conductor.save_step(:a, 'before', '1') as s \gset
select is(conductor.emit_event('emit-first', '{"n": 2}'), 0, 'A second emit with no waiters wakes nobody.');
select is((select (payload, emitted_at)::text from conductor.events where name = 'emit-first'),
  ('{"n": 1}'::jsonb, '2030-01-01 00:00:00+00'::timestamptz)::text,
  'The event keeps its first payload and time.');
select results_eq(format($$select state, result from conductor.suspend(%s, 'w', 'event', 'emit-first')$$, :a),
  $$values ('ready'::text, '{"event": "emit-first", "payload": {"n": 1}}'::jsonb)$$,
  'A later wait gets the first payload.');

select conductor.enqueue('k', '{}', 'emit-first') as t2 \gset
select conductor_tests.claim_one('emit-first') as a2 \gset
select state from conductor.suspend(:a2, 'w', 'event', 'emit-first-2') \gset
select conductor.emit_event('emit-first-2', '{"v": "one"}') as n1 \gset
select conductor.emit_event('emit-first-2', '{"v": "two"}') as n2 \gset
select is((select result from conductor.steps where task_id = :t2 and name = 'w'),
  '{"event": "emit-first-2", "payload": {"v": "one"}}'::jsonb,
  'A waiter woken by the first emit keeps the first payload after a second emit.');

select * from finish();
rollback;
