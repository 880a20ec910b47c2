-- Verify conductor:functions/cancel on pg

begin;

select 1 / (conductor.cancel(conductor.enqueue('verify', queue => 'verify-cancel')) = 1)::int;

rollback;
