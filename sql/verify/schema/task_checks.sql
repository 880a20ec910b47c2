-- Verify conductor:schema/task_checks on pg: the state machine's checks stay

begin;

select 1 / (count(*) = 2)::int
  from pg_catalog.pg_constraint
 where conrelid = 'conductor.tasks'::regclass and contype = 'c'
   and conname in ('tasks_running_has_lease', 'tasks_finished_when_terminal');
select 1 / (count(*) = 0)::int
  from pg_catalog.pg_constraint
 where conrelid = 'conductor.tasks'::regclass and conname = 'tasks_payload_is_object';

rollback;
