-- list_tasks: newest first, filtered by status, queue and kind, paged by before_id and limit.
begin;
select plan(6);
\ir ../helpers.psql

select conductor.enqueue('a', '{}', 'list-q') as t1 \gset
select conductor.enqueue('b', '{}', 'list-q') as t2 \gset
select conductor.enqueue('a', '{}', 'list-q') as t3 \gset
select conductor.enqueue('a', '{}', 'list-other') as t4 \gset
select conductor_tests.claim_one('list-q') as a1 \gset
select conductor.complete(:a1) as d \gset

select results_eq($$select id from conductor.list_tasks(queue => 'list-q')$$,
  format('values (%s::bigint), (%s::bigint), (%s::bigint)', :t3, :t2, :t1),
  'Filtered by queue, newest first.');
select results_eq($$select id from conductor.list_tasks(queue => 'list-q', kind => 'a')$$,
  format('values (%s::bigint), (%s::bigint)', :t3, :t1), 'Filtered by queue and kind.');
select results_eq($$select id from conductor.list_tasks('succeeded', 'list-q')$$,
  format('values (%s::bigint)', :t1), 'Filtered by status.');
select results_eq(format($$select id from conductor.list_tasks(queue => 'list-q', "limit" => 1)$$),
  format('values (%s::bigint)', :t3), 'limit cuts the page.');
select results_eq(format($$select id from conductor.list_tasks(queue => 'list-q', before_id => %s, "limit" => 1)$$, :t3),
  format('values (%s::bigint)', :t2), 'before_id gives the next page.');
select is_empty($$select * from conductor.list_tasks(queue => 'list-q', "limit" => 0)$$, 'limit 0 lists nothing.');

select * from finish();
rollback;
