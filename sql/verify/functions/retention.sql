-- Verify conductor:functions/retention on pg

begin;

update conductor.settings set fake_clock = true, max_log_bytes = 100;  -- rolled back with the rest
set local conductor.fake_now = '2000-01-01 00:00:00+00';
select conductor.enqueue('verify', queue => 'verify-retention') as task \gset
-- save_log writes into the attempts of the caller's own registered workers
select conductor.register_worker('verify-retention-w');
select c.attempt_id as attempt
  from conductor.claim('verify-retention-w', array['verify-retention'], 1, interval '1 minute') c \gset
select conductor.save_log(:attempt, '[{"message": "one"}, {"message": "two"}]');
select conductor.save_log(:attempt, pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('message', pg_catalog.repeat('x', 100))), 2);
select 1 / (pg_catalog.jsonb_array_length(lines) = 2 and dropped = 3)::int
  from conductor.attempt_logs where attempt_id = :attempt;
select conductor.complete(:attempt, '{}');
set local conductor.fake_now = '2000-01-09 00:00:00+00';
select 1 / (deleted >= 1)::int from conductor.apply_retention() where what = 'succeeded_runs';
select 1 / (count(*) = 0)::int from conductor.tasks where id = :task;
select 1 / (count(*) = 0)::int from conductor.attempt_logs where attempt_id = :attempt;
-- the retention floor: a kind's retention no admin wrote counts as at least min_retention
select 1 / (conductor._kind_retention(interval '0', null, interval '1 day') = interval '1 day')::int;
select 1 / (conductor._kind_retention(interval '2 days', null, interval '1 day') = interval '2 days')::int;
select 1 / (conductor._kind_retention(null, null, interval '1 day') is null)::int;
do $$
begin
  perform conductor.save_log(-1, '[]');
  raise exception 'save_log accepted an unknown attempt';
exception when sqlstate 'QC203' then
  null;
end
$$;
select 1 / (not pg_catalog.has_function_privilege('public', 'conductor._kind_retention(interval, text, interval)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.apply_retention(integer)', 'execute')::int;
select 1 / pg_catalog.has_function_privilege('conductor_admin', 'conductor.apply_retention(integer)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.apply_retention(integer)', 'execute'))::int;
select 1 / pg_catalog.has_function_privilege('conductor_worker', 'conductor.save_log(bigint, jsonb, integer)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client', 'conductor.save_log(bigint, jsonb, integer)', 'execute'))::int;

rollback;
