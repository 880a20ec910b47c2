-- At most one running task per concurrency_key (DESIGN.md: claim "honouring concurrency keys";
-- sql/schema/tasks.sql: "at most one running task per key").
begin;
select plan(3);
\ir ../helpers.psql

select conductor.enqueue('sync', '{}', 'ckey-q', concurrency_key => 'account-7') as first \gset
select conductor.enqueue('sync', '{}', 'ckey-q', concurrency_key => 'account-7') as second \gset
select conductor.enqueue('sync', '{}', 'ckey-q', concurrency_key => 'account-8') as other \gset

select results_eq($$select task_id from conductor.claim('w1', array['ckey-q'], 10) order by task_id$$,
  format('values (%s::bigint), (%s::bigint)', :first, :other),
  'One claim takes at most one task of a concurrency_key: the second of account-7 waits.');
select is_empty($$select * from conductor.claim('w2', array['ckey-q'], 10)$$,
  'While a task of the key runs, another worker gets none of the key.');

select id as a1 from conductor.attempts where task_id = :first and outcome is null \gset
select conductor.complete(:a1) as done \gset
select results_eq($$select task_id from conductor.claim('w2', array['ckey-q'], 10)$$,
  format('values (%s::bigint)', :second),
  'Once it finished, the next task of the key is claimed.');

select * from finish();
rollback;
