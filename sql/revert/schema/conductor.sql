-- Revert conductor:schema/conductor from pg
-- The roles are cluster-wide and may serve other databases: they stay.

begin;

drop type conductor.task_status;
drop schema conductor;

commit;
