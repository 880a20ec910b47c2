-- Verify conductor:functions/search on pg

begin;

select conductor.enqueue('verify-search', '{"verify": 1}', queue => 'verify-search') as id \gset
select 1 / (s.tasks[1].id = :id and s.next_before_id is null and not s.cut_short)::int
  from conductor.search_tasks(queue => 'verify-search', payload_contains => '{"verify": 1}') s;
do $$
begin
  perform conductor.search_tasks(status => 'nope');
  raise exception 'search_tasks accepted an unknown status';
exception when sqlstate 'QC105' then
  null;
end
$$;
select 1 / pg_catalog.has_function_privilege('conductor_client',
  'conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz, bigint, integer, integer)', 'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('conductor_client',
  'conductor._enqueued_id_bound(timestamptz)', 'execute'))::int;

rollback;
