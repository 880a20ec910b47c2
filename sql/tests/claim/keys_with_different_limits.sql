-- Tasks of one key may carry different limits: each starts only while fewer tasks of its
-- key run than its own limit, counting the ones this claim starts before it, and the
-- key's tasks start in claim order (a task that may not start holds back the key's
-- later ones, whatever their limits).
begin;
select plan(4);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'mixed-q', concurrency_key => 'K') as t1 \gset
select conductor.enqueue('k', '{}', 'mixed-q', concurrency_key => 'K', concurrency_limit => 3) as t2 \gset
select conductor.enqueue('k', '{}', 'mixed-q', concurrency_key => 'K', concurrency_limit => 3) as t3 \gset
select conductor.enqueue('k', '{}', 'mixed-q', concurrency_key => 'K', concurrency_limit => 3) as t4 \gset
select conductor.enqueue('k', '{}', 'mixed-q', concurrency_key => 'K', concurrency_limit => 2) as t5 \gset

select results_eq($$select task_id from conductor.claim('w1', array['mixed-q'], 10)$$,
  format('values (%s::bigint)', :t1),
  'The first task (limit 1) starts alone: with it running, the next would make two.');
select results_eq($$select task_id from conductor.claim('w1', array['mixed-q'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint)', :t2, :t3),
  'With one running, two tasks of limit 3 start (three run), and no more.');
select conductor.complete(a.id) from conductor.attempts a where a.task_id = :t1 and a.outcome is null;
select results_eq($$select task_id from conductor.claim('w1', array['mixed-q'], 10)$$,
  format('values (%s::bigint)', :t4),
  'With two running, the next task of limit 3 starts; the one after it (limit 2) may not.');
select conductor.complete(a.id) from conductor.attempts a where a.task_id = :t2 and a.outcome is null;
select is_empty($$select * from conductor.claim('w1', array['mixed-q'], 10)$$,
  'With two running, the task of limit 2 still waits: fewer than its own limit must run.');

select * from finish();
rollback;
