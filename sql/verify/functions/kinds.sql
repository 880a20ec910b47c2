-- Verify conductor:functions/kinds on pg

begin;

select conductor.configure_kind('verify-kind', max_attempts => 5, queue => 'verify-q', priority => 3,
                                concurrency_key => 'verify-key', timeout => '1 minute');
select 1 / ((max_attempts, queue, priority, concurrency_key, timeout)
            = (5, 'verify-q', 3, 'verify-key', interval '1 minute'))::int
  from conductor.kinds where kind = 'verify-kind';
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval)',
  'execute')::int;
do $$
begin
  perform conductor.configure_kind('verify-kind', backoff_factor => 'NaN');
  raise exception 'configure_kind accepted a backoff_factor NaN';
exception when sqlstate 'QC106' then
  null;
end
$$;

rollback;
