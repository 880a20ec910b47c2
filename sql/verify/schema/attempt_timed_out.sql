-- Verify conductor:schema/attempt_timed_out on pg

begin;

select timed_out::boolean from conductor.attempts where false;
select 1 / (not pg_catalog.has_column_privilege('conductor_worker', 'conductor.attempts', 'timed_out', 'update'))::int;

rollback;
