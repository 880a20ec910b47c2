-- A concurrency_limit of N lets at most N tasks of a concurrency_key run at once; the
-- others of the key wait in claim order and block no other key. Limit 1 (the default)
-- is the rule since v0.1.0.
begin;
select plan(6);
\ir ../helpers.psql

select array_agg(conductor.enqueue('export', jsonb_build_object('n', n), 'climit-q',
                                   concurrency_key => 'customer-1', concurrency_limit => 3) order by n) as a
  from generate_series(1, 5) n \gset
select conductor.enqueue('export', '{}', 'climit-q', concurrency_key => 'customer-2') as b1 \gset
select conductor.enqueue('export', '{}', 'climit-q', concurrency_key => 'customer-2') as b2 \gset

select is((select concurrency_limit from conductor.tasks where id = (:'a'::bigint[])[1]), 3,
  'The task stores the limit it was enqueued with.');
select results_eq($$select task_id from conductor.claim('w1', array['climit-q'], 10) order by task_id$$,
  format('select unnest(%L::bigint[]) union all select %s order by 1',
         (:'a'::bigint[])[1:3], :b1),
  'One claim takes three tasks of customer-1 (its limit) and one of customer-2 (no limit given: 1).');
select is_empty($$select * from conductor.claim('w2', array['climit-q'], 10)$$,
  'While three of customer-1 and one of customer-2 run, no other worker gets a task of either.');
select is((select count(*)::int from conductor.tasks
            where concurrency_key = 'customer-1' and status = 'running'), 3,
  'Exactly three tasks of customer-1 are running.');

select conductor.complete(a.id) from conductor.attempts a
 where a.task_id = (:'a'::bigint[])[2] and a.outcome is null;
select results_eq($$select task_id from conductor.claim('w2', array['climit-q'], 10)$$,
  format('values (%s::bigint)', (:'a'::bigint[])[4]),
  'When one of them finishes, the next task of customer-1 in claim order starts, and only it.');
select is((select count(*)::int from conductor.tasks
            where concurrency_key = 'customer-1' and status = 'running'), 3,
  'Three of customer-1 run again, never four.');

select * from finish();
rollback;
