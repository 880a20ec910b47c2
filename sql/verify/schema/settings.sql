-- Verify conductor:schema/settings on pg
--
-- One row; the application roles read it; only conductor_admin updates it.

begin;

select 1 / (count(*) = 1)::int from conductor.settings;
select 1 / (not pg_catalog.has_table_privilege('conductor_client', 'conductor.settings', 'update')
            and not pg_catalog.has_table_privilege('conductor_worker', 'conductor.settings', 'update')
            and pg_catalog.has_table_privilege('conductor_admin', 'conductor.settings', 'update'))::int;

rollback;
