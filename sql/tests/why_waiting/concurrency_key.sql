-- A due task whose concurrency key another task holds running waits for it: why_waiting
-- says concurrency_key and names the holder; when the holder finishes it is ready. Read
-- as conductor_client.
begin;
select plan(3);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-key}') as r \gset
select conductor.enqueue('k', '{}', 'ww-key', concurrency_key => 'ww-account-7') as holder \gset
select conductor.enqueue('k', '{}', 'ww-key', concurrency_key => 'ww-account-7') as t \gset
select conductor_tests.claim_one('ww-key', 'ww-w') as a \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail, holder_id from conductor.why_waiting(array[%s]::bigint[])', :t),
  format($$values ('concurrency_key'::text, '1 of 1 running for concurrency key ''ww-account-7'' (task %s among them)'::text, %s::bigint)$$,
         :holder, :holder),
  'The second task of the key waits for the running one, and names it.');
select is_empty(format('select * from conductor.why_waiting(array[%s]::bigint[])', :holder),
  'The running task itself is not waiting: no row.');
reset role;

select conductor.complete(:a, '{}');
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'Once the holder finished, the task is ready.');
reset role;

select * from finish();
rollback;
