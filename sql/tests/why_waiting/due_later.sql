-- A queued task due later waits for its run_at: why_waiting says due_later, until_at the
-- run_at; once the clock reaches it the task is ready. Read as conductor_client.
begin;
select plan(3);
\ir ../helpers.psql
set local timezone = 'UTC';
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-later}') as r \gset
select conductor.enqueue('k', '{}', 'ww-later', run_at => '2030-01-01 01:00:00+00') as t \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail, until_at from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('due_later'::text, 'due at 2030-01-01 01:00:00+00'::text, '2030-01-01 01:00:00+00'::timestamptz)$$,
  'A task due at 01:00 waits for its run_at, and says until when.');
reset role;

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-later}') as r \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'At its run_at it is ready.');
select is((select ahead from conductor.why_waiting(array[:t]::bigint[])), 0::bigint,
  'Nothing comes before it in its queue.');
reset role;

select * from finish();
rollback;
