-- Verify conductor:schema/hot_fillfactor on pg

begin;

select 1 / (count(*) = 2)::int
  from pg_catalog.pg_class c
 where c.oid in ('conductor.tasks'::regclass, 'conductor.attempts'::regclass)
   and 'fillfactor=50' = any (c.reloptions);

rollback;
