-- A task whose queue and kind no live worker serves (conductor._serves; live: seen within
-- unknown_kind_after) waits for one: why_waiting says no_worker, whether no worker serves
-- the queue or the one there does not serve the kind, or the workers went quiet. Read as
-- conductor_client.
begin;
select plan(4);
\ir ../helpers.psql
set local timezone = 'UTC';
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.register_worker('ww-a', queues => '{ww-served}', kinds => '{A}') as r \gset
select conductor.enqueue('A', '{}', 'ww-nobody') as nobody \gset
select conductor.enqueue('B', '{}', 'ww-served') as b \gset
select conductor.enqueue('A', '{}', 'ww-served') as a \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail from conductor.why_waiting(array[%s]::bigint[])', :nobody),
  $$values ('no_worker'::text, 'no worker seen since 2030-01-01 00:05:00+00 serves kind ''A'' on queue ''ww-nobody'''::text)$$,
  'A queue no worker serves: no_worker, naming the kind and the queue.');
select is((select reason from conductor.why_waiting(array[:b]::bigint[])), 'no_worker',
  'A kind the queue''s worker has no handler for: no_worker.');
select is((select reason from conductor.why_waiting(array[:a]::bigint[])), 'ready',
  'The kind it serves on its queue is ready.');
reset role;

set local conductor.fake_now = '2030-01-01 00:15:01+00';
set local role t_client;
select is((select reason from conductor.why_waiting(array[:a]::bigint[])), 'no_worker',
  'Once the worker was not seen for unknown_kind_after, nobody serves it.');
reset role;

select * from finish();
rollback;
