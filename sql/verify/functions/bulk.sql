-- Verify conductor:functions/bulk on pg

begin;

select conductor.cancel(conductor.enqueue('verify', queue => 'verify-bulk'));
select 1 / (matching = 1)::int from conductor.preview_matching('retry', queue => 'verify-bulk');
select 1 / (conductor.retry_matching(queue => 'verify-bulk', expected => 1) = 1)::int;
select 1 / (conductor.cancel_matching(queue => 'verify-bulk', status => 'queued') = 1)::int;
select 1 / (count(*) = 1)::int from conductor.tasks where queue = 'verify-bulk' and status = 'cancelled';
do $$
begin
  perform conductor.cancel_matching();
  raise exception 'cancel_matching accepted an empty filter';
exception when sqlstate 'QC209' then
  null;
end
$$;
select 1 / pg_catalog.has_function_privilege('conductor_admin',
  'conductor.retry_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, boolean, integer)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client',
  'conductor.cancel_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer)', 'execute'))::int;

rollback;
