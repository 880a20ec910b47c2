-- Verify conductor:functions/cron on pg

begin;

select 1 / (conductor.cron_next('0 0 * * *', '2026-01-01 12:00Z', 'UTC') = '2026-01-02 00:00Z')::int;
select 1 / (conductor.cron_next('30 2 * * *', '2026-03-08 05:00Z', 'America/New_York')
            = '2026-03-08 07:00Z')::int;
select conductor.cron_validate('*/15 9-17 * * MON-FRI');
-- within the engine's time range: NULL past its end, QC106 for an after outside it
select 1 / (conductor.cron_next('0 0 1 1 *', '9999-06-01Z', 'UTC') is null)::int;
do $$
begin
  perform conductor.cron_next('* * * * *', 'infinity', 'UTC');
  raise exception 'cron_next took infinity';
exception when sqlstate 'QC106' then
  null;
end
$$;
-- nobody but the owner may call the private helpers
select 1 / (not has_function_privilege('public', 'conductor._cron_parse(text)', 'execute'))::int;

rollback;
