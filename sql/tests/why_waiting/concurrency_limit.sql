-- A due keyed task waits while as many tasks of its key run as its concurrency_limit
-- allows: why_waiting says "N of limit running for concurrency key X"; with room under the
-- limit it is ready. waiting_reasons counts it under concurrency_key. Read as conductor_client.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('wl-w', queues => '{wl-key}') as r \gset
select conductor.enqueue('k', '{}', 'wl-key', concurrency_key => 'tenant-9', concurrency_limit => 2) as r1 \gset
select conductor.enqueue('k', '{}', 'wl-key', concurrency_key => 'tenant-9', concurrency_limit => 2) as r2 \gset
select conductor.enqueue('k', '{}', 'wl-key', concurrency_key => 'tenant-9', concurrency_limit => 2) as t \gset
select conductor_tests.claim_one('wl-key', 'wl-w') as a1 \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'With one of two running, the third task of the key is ready (behind the second).');
reset role;
select conductor_tests.claim_one('wl-key', 'wl-w') as a2 \gset
set local role t_client;
select results_eq(format('select reason, detail, holder_id from conductor.why_waiting(array[%s]::bigint[])', :t),
  format($$values ('concurrency_key'::text, '2 of 2 running for concurrency key ''tenant-9'' (task %s among them)'::text, %s::bigint)$$,
         :r1, :r1),
  'With two of two running, it waits for the key, and says how many run of how many.');
select results_eq($$select reason, tasks from conductor.waiting_reasons('wl-key')$$,
  $$values ('concurrency_key'::text, 1::bigint)$$,
  'waiting_reasons counts it under concurrency_key.');
reset role;
select conductor.complete(:a1, '{}');
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'Once one finished, it is ready.');
reset role;

select * from finish();
rollback;
