-- Revert conductor:schema/schedule_owners from pg

begin;

alter table conductor.schedules
  drop column owner;

commit;
