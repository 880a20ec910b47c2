-- Verify conductor:functions/kinds on pg

begin;

select conductor.configure_kind('verify-kind', max_attempts => 5);
select 1 / (max_attempts = 5)::int from conductor.kinds where kind = 'verify-kind';

rollback;
