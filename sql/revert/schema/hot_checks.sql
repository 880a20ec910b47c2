-- Revert conductor:schema/hot_checks from pg

begin;
set local role conductor_owner;

alter table conductor.tasks
  add constraint tasks_running_has_lease check (
    (status = 'running') = (lease_expires_at is not null)
    and (status <> 'running' or attempt_id is not null)),
  add constraint tasks_finished_when_terminal check (
    (status in ('queued', 'running', 'waiting')) = (finished_at is null));
alter table conductor.attempts
  add constraint attempts_outcome_valid check (
    outcome in ('succeeded', 'failed', 'released', 'lost', 'cancelled', 'suspended')),
  add constraint attempts_finished_with_outcome check (
    (outcome is null) = (finished_at is null));

commit;
