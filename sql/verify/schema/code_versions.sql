-- Verify conductor:schema/code_versions on pg

begin;

select code_version::text from conductor.tasks where false;
select seq::bigint from conductor.steps where false;
select (null::conductor.claimed_task).code_version::text, (null::conductor.claimed_task).step_order::text[];

rollback;
