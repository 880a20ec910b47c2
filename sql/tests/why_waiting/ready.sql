-- A ready task (nothing keeps it back) says how many due tasks of its queue claim takes
-- first: higher priority, or the same and earlier run_at or lower id; tasks due later and
-- other queues' do not count. Tasks not queued or unknown answer no row. Read as
-- conductor_client.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-ready, ww-other}') as r \gset
select conductor.enqueue('k', '{}', 'ww-ready', priority => 5) as high \gset
select conductor.enqueue('k', '{}', 'ww-ready') as early \gset
select conductor.enqueue('k', '{}', 'ww-ready', run_at => '2030-01-01 00:00:01+00') as later \gset
select conductor.enqueue('k', '{}', 'ww-other', priority => 9) as other \gset
set local conductor.fake_now = '2030-01-01 00:00:02+00';
select conductor.enqueue('k', '{}', 'ww-ready') as t \gset
select conductor.enqueue('k', '{}', 'ww-ready', run_at => '2030-01-02 00:00:00+00') as tomorrow \gset
select conductor.register_worker('ww-w', queues => '{ww-ready, ww-other}') as r \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail, ahead from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('ready'::text, 'ready: 3 due tasks of queue ''ww-ready'' come first (higher priority or earlier run_at)'::text, 3::bigint)$$,
  'Three due tasks of its queue come first: the higher priority one and two due earlier.');
select results_eq(format('select reason, detail, ahead from conductor.why_waiting(array[%s]::bigint[])', :high),
  $$values ('ready'::text, 'ready: next in line on queue ''ww-ready'''::text, 0::bigint)$$,
  'The highest priority task is next in line.');
select results_eq(format('select task_id, reason from conductor.why_waiting(array[%s, %s, -1]::bigint[])', :t, :early),
  format('values (%s::bigint, %L::text), (%s, %L)', :early, 'ready', :t, 'ready'),
  'Several tasks answer by id; an unknown id answers nothing.');
reset role;

select conductor.cancel(:t) as c \gset
set local role t_client;
select is_empty(format('select * from conductor.why_waiting(array[%s]::bigint[])', :t),
  'A cancelled task is not waiting: no row.');
reset role;

select * from finish();
rollback;
