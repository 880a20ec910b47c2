-- apply_retention deletes at most batch runs a call (runs, not tasks: each run here has two
-- tasks), oldest first; a caller loops until every count is 0. It refuses a batch outside
-- 1..1000000 with QC106, and only conductor_worker and conductor_admin may call it.
begin;
select plan(10);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;

select conductor.enqueue('root', '{}', 'ar-batch') as first_root \gset
do $$
begin
  for i in 1 .. 5 loop
    perform set_config('conductor.fake_now', (timestamptz '2030-01-01 00:00:00+00' + i * interval '1 hour')::text, true);
    perform conductor.enqueue('child', '{}', 'ar-batch-c',
              parent_id => conductor.enqueue('root', '{}', 'ar-batch-r'));
    perform conductor.complete(conductor_tests.claim_one('ar-batch-r'));
    perform conductor.complete(conductor_tests.claim_one('ar-batch-c'));
  end loop;
end
$$;
select min(id) as oldest_root from conductor.tasks where queue = 'ar-batch-r' \gset

set local conductor.fake_now = '2030-02-01 00:00:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 2::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'A batch of 2 deletes two runs.');
reset role;
select is((select count(*)::int from conductor.tasks where queue in ('ar-batch-r', 'ar-batch-c')), 6,
  'Four tasks went: two whole runs.');
select is((select count(*)::int from conductor.tasks where id = :oldest_root), 0, 'The oldest run went first.');
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 2::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'The next call two more.');
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Then the last.');
select results_eq($$select what, deleted from conductor.apply_retention(batch => 2)$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Then every count is 0: the loop ends.');
select throws_ok($$select * from conductor.apply_retention(batch => 0)$$, 'QC106',
  'invalid batch 0: between 1 and 1000000', 'A batch of 0 is refused with QC106.');
select throws_ok($$select * from conductor.apply_retention(batch => NULL)$$, 'QC106', NULL, 'A NULL batch is refused.');
reset role;
select is((select count(*)::int from conductor.tasks where id = :first_root), 1, 'The queued task stays.');
set local role t_client;
select throws_ok($$select * from conductor.apply_retention()$$, '42501', NULL,
  'A client may not call apply_retention.');
reset role;

select * from finish();
rollback;
