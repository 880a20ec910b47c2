-- Verify conductor:functions/claim on pg

begin;

select conductor.enqueue('verify', queue => 'verify-claim');
select conductor.enqueue('verify-other', queue => 'verify-claim');
select 1 / (count(*) = 1)::int
  from conductor.claim('verify-worker', array['verify-claim'], 10, kinds => array['verify']);
-- from several queues (conductor._pick_queues)
select conductor.enqueue('verify', queue => 'verify-claim-b');
select 1 / (count(*) = 1)::int
  from conductor.claim('verify-worker', array['verify-claim', 'verify-claim-b'], 10, kinds => array['verify']);
-- a keyed claim locks its key's slot row, and takes no advisory lock (the enqueue's
-- in-flight keys, two integers, are functions/notify's)
select conductor.enqueue('verify', queue => 'verify-claim-key', concurrency_key => 'verify-key');
select 1 / (count(*) = 1)::int from conductor.claim('verify-worker', array['verify-claim-key'], 10);
select 1 / (count(*) = 0)::int from pg_catalog.pg_locks l
 where l.pid = pg_catalog.pg_backend_pid() and l.locktype = 'advisory' and l.objsubid = 1;
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.claim(text, text[], integer, interval, text[], boolean, text[])', 'execute')::int;
select 1 / (pg_catalog.to_regprocedure('conductor.claim(text, text[], integer, interval, text[])') is null)::int;
select 1 / (pg_catalog.to_regprocedure('conductor.claim(text, text[], integer, interval, text[], boolean)') is null)::int;
-- code versions: a claim that names them records the first on the task it starts
select conductor.enqueue('verify', queue => 'verify-claim-cv');
select 1 / (count(*) = 1)::int
  from conductor.claim('verify-worker', array['verify-claim-cv'], 10, code_versions => array['verify-v'])
 where code_version = 'verify-v';

rollback;
