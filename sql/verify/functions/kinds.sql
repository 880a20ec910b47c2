-- Verify conductor:functions/kinds on pg

begin;

select conductor.configure_kind('verify-kind', max_attempts => 5, queue => 'verify-q', priority => 3,
                                concurrency_key => 'verify-key', timeout => '1 minute',
                                retain_succeeded => '1 day', retain_failed => '2 days', concurrency_limit => 3);
select 1 / ((max_attempts, queue, priority, concurrency_key, timeout, retain_succeeded, retain_failed, concurrency_limit)
            = (5, 'verify-q', 3, 'verify-key', interval '1 minute', interval '1 day', interval '2 days', 3))::int
  from conductor.kinds where kind = 'verify-kind';
-- the kind's policy is the caller's
select 1 / (count(*) = 1)::int from conductor.kinds where kind = 'verify-kind' and owner = conductor._caller();
select 1 / pg_catalog.has_function_privilege('conductor_worker',
  'conductor.configure_kind(text, integer, integer, interval, double precision, interval, text, integer, text, interval, interval, interval, integer, interval)',
  'execute')::int;
do $$
begin
  perform conductor.configure_kind('verify-kind', retain_failed => '-1 day');
  raise exception 'configure_kind accepted a retain_failed of -1 day';
exception when sqlstate 'QC106' then
  null;
end
$$;
do $$
begin
  perform conductor.configure_kind('verify-kind', backoff_factor => 'NaN');
  raise exception 'configure_kind accepted a backoff_factor NaN';
exception when sqlstate 'QC106' then
  null;
end
$$;

rollback;
