-- Verify conductor:schema/rewind on pg

begin;

select seq::bigint from conductor.steps where false;
select task_id::bigint, source_id::bigint, from_step::text, forked_at::timestamptz from conductor.forks where false;
select 1 / (not pg_catalog.has_table_privilege('conductor_client', 'conductor.forks', 'insert'))::int;

rollback;
