-- Verify conductor:schema/hot_checks on pg

begin;

select 1 / (count(*) = 0)::int
  from pg_catalog.pg_constraint c
 where c.conrelid in ('conductor.tasks'::regclass, 'conductor.attempts'::regclass)
   and c.contype = 'c';

rollback;
