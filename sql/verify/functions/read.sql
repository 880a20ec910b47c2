-- Verify conductor:functions/read on pg

begin;

select conductor.enqueue('verify', queue => 'verify-read');
select 1 / (count(*) = 1)::int
  from conductor.get_task((select max(id) from conductor.tasks where queue = 'verify-read'));
select count(*) from conductor.list_tasks(status => 'queued', "limit" => 1);
select count(*) from conductor.list_attempts(array[1]::bigint[]);
select 1 / pg_catalog.has_function_privilege('conductor_client', 'conductor.list_attempts(bigint[])', 'execute')::int;

rollback;
