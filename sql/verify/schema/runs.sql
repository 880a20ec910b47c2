-- Verify conductor:schema/runs on pg

begin;

select task_id, name, result, attempt_id, saved_at from conductor.steps where false;
select name, payload, emitted_at from conductor.events where false;

rollback;
