-- Deploy conductor:schema/schedule_audit to pg
--
-- Who declared each schedule and who last changed it, and why it last failed to
-- fire. Adds to conductor.schedules (schema/schedules):
--
--   declared_by    'code': declared by a role without conductor_admin (a worker
--                  declaring its schedules at start), which such a role may
--                  replace; 'admin': created or changed by a member of
--                  conductor_admin, which only an admin may change
--                  (create_schedule raises QC207 for anyone else). A row from
--                  v0.1.0 counts as the operator's: who wrote it is unknown,
--                  and a worker re-declaring it unchanged still succeeds.
--   changed_by     the role whose call last changed the schedule (NULL: v0.1.0)
--   last_error     why tick() last failed to fire it ('SQLSTATE: message'),
--   last_error_at  and when; both NULL once it fires again
--
-- Written by functions/schedules only; read by every role with the table.

begin;
set local role conductor_owner;

alter table conductor.schedules
  add column declared_by   text not null default 'admin',
  add column changed_by    text,
  add column last_error    text,
  add column last_error_at timestamptz,
  add constraint schedules_declared_by_valid check (declared_by in ('code', 'admin'));

comment on column conductor.schedules.declared_by is
  '''code'': declared by a role without conductor_admin, which such a role may replace; '
  '''admin'': created or changed by an admin, which only an admin may change.';
comment on column conductor.schedules.changed_by is
  'The role whose call last changed the schedule (NULL for a row older than this column).';
comment on column conductor.schedules.last_error is
  'Why tick() last failed to fire the schedule (SQLSTATE: message); NULL once it fires again.';
comment on column conductor.schedules.last_error_at is
  'When tick() last failed to fire the schedule; NULL once it fires again.';

commit;
