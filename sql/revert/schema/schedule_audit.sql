-- Revert conductor:schema/schedule_audit from pg

begin;

alter table conductor.schedules
  drop constraint schedules_declared_by_valid,
  drop column last_error_at,
  drop column last_error,
  drop column changed_by,
  drop column declared_by;

commit;
