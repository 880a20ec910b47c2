-- Verify conductor:schema/ownership on pg

begin;

select owner::text from conductor.kinds where false;
select owner::text from conductor.rate_limits where false;
select owner::text from conductor.workers where false;
-- the columns, not their values: an admin may have changed them since the deploy
select min_retention::interval, min_rate_limit::double precision from conductor.settings where false;

rollback;
