-- Verify conductor:functions/kinds on pg

begin;

select conductor.configure_kind('verify-kind', max_attempts => 5);
select 1 / (max_attempts = 5)::int from conductor.kinds where kind = 'verify-kind';
do $$
begin
  perform conductor.configure_kind('verify-kind', backoff_factor => 'NaN');
  raise exception 'configure_kind accepted a backoff_factor NaN';
exception when sqlstate 'QC106' then
  null;
end
$$;

rollback;
