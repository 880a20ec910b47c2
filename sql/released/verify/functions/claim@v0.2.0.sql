-- Verify conductor:functions/claim on pg

begin;

select conductor.enqueue('verify', queue => 'verify-claim');
select conductor.enqueue('verify-other', queue => 'verify-claim');
select 1 / (count(*) = 1)::int
  from conductor.claim('verify-worker', array['verify-claim'], 10, kinds => array['verify']);
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.claim(text, text[], integer, interval, text[])', 'execute')::int;

rollback;
