-- Deploy conductor:schema/schedule_owners to pg
-- requires: schema/owner
-- requires: schema/schedule_audit
--
-- The login that declared each schedule. Adds to conductor.schedules
-- (schema/schedules, schema/schedule_audit):
--
--   owner   the login (conductor._caller(): the role the session SET ROLE to,
--           else the login) that created the schedule. Another login without
--           conductor_admin may not replace, change or disable it: QC208
--           through conductor._check_owner (functions/internal), on top of
--           declared_by's QC207 for an operator's schedule. NULL: a row stored
--           before v0.3.0; it keeps NULL through the upgrade (who declared it is
--           unknown) and the first login that declares it again claims it.
--
-- Written by functions/schedules only (create_schedule); read by every role
-- with the table.

begin;
set local role conductor_owner;

alter table conductor.schedules
  add column owner text;

comment on column conductor.schedules.owner is
  'The login that declared the schedule (conductor._caller()); only it or an admin may change it '
  '(QC208). NULL: stored before v0.3.0, claimed by the first login that declares it again.';

commit;
