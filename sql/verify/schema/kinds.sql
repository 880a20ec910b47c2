-- Verify conductor:schema/kinds on pg

begin;

select kind, max_attempts, max_recoveries, backoff_base, backoff_factor, backoff_max, updated_at
  from conductor.kinds
 where false;

rollback;
