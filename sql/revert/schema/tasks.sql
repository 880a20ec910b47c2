-- Revert conductor:schema/tasks from pg

begin;

drop table conductor.tasks;

commit;
