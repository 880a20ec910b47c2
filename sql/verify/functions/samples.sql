-- Verify conductor:functions/samples on pg

begin;

select conductor.sample_queues();
select 1 / (conductor.sample_queues() = 0)::int;  -- the minute is written once
select 1 / (count(*) >= 1)::int from conductor.sample_minutes
 where minute = conductor._minute_of(conductor.now()) - interval '1 minute';
select 1 / (count(*) = 60)::int
  from conductor.queue_series(since => conductor._minute_of(conductor.now()) - interval '1 hour',
                              until => conductor._minute_of(conductor.now()), queues => array['verify-samples']);
do $$
begin
  perform conductor.queue_series(since => conductor.now(), step => interval '30 seconds');
  raise exception 'queue_series accepted a step of 30 seconds';
exception when sqlstate 'QC106' then
  null;
end
$$;
select 1 / pg_catalog.has_function_privilege('conductor_client',
  'conductor.queue_series(timestamptz, timestamptz, interval, text[])', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.sample_queues()', 'execute'))::int;

rollback;
