-- A queued run recorded under a code version waits for a live worker that replays it:
-- why_waiting says code_version, naming it, while the workers serving its queue and kind
-- list other versions in their registration (metadata code_versions, as the drivers write
-- it); a worker listing it makes the run ready. waiting_reasons counts it. As conductor_client.
begin;
select plan(5);
\ir ../helpers.psql
set local timezone = 'UTC';
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.register_worker('wv-old', queues => '{wv-q}') as r \gset
select conductor.enqueue('A', '{}', 'wv-q') as t \gset
-- a v1 worker started the run, which waits for an event and is woken later
select a.attempt_id as a from conductor.claim('wv-old', array['wv-q'], code_versions => array['v1']) a \gset
select state from conductor.suspend(:a, 'event:go', 'event', event => 'go');
select conductor.emit_event('go');
select conductor.deregister_worker('wv-old');
select conductor.register_worker('wv-new', queues => '{wv-q}', metadata => '{"code_versions": ["v2"]}') as r2 \gset
select conductor.register_worker('wv-none', queues => '{wv-q}') as r3 \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select is((select status::text from conductor.tasks where id = :t), 'queued', 'Setup: the woken run is queued.');
select results_eq(format('select reason, detail from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('code_version'::text, 'no worker seen since 2030-01-01 00:05:00+00 that serves kind ''A'' on queue ''wv-q'' replays code version ''v1'', which the run started on'::text)$$,
  'A v2 worker and one naming no version are live: code_version, naming v1.');
select results_eq($$select reason, tasks from conductor.waiting_reasons('wv-q')$$,
  $$values ('code_version'::text, 1::bigint)$$, 'waiting_reasons counts it under code_version.');
reset role;

select conductor.register_worker('wv-new', queues => '{wv-q}', metadata => '{"code_versions": ["v2", "v1"]}') as r4 \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'A worker that also replays v1: the run is ready.');
reset role;
update conductor.tasks set code_version = null where id = :t;
select conductor.register_worker('wv-new', queues => '{wv-q}', metadata => '{"code_versions": ["v2"]}') as r5 \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'A task with no recorded version goes to any worker.');
reset role;

select * from finish();
rollback;
