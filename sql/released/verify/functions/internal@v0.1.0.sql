-- Verify conductor:functions/internal on pg

begin;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select 1 / (conductor.now() = '2030-01-01 00:00:00+00')::int;
select 1 / (conductor._backoff(1, 1, null, null, null) between interval '24 seconds' and interval '30 seconds')::int;
select 1 / (conductor._backoff(1, 20, null, null, null) <= interval '1 hour')::int;

rollback;
