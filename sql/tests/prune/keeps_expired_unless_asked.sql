-- An expired task is kept like a failed one: prune deletes it only with include_failed
-- (work that never ran, worth a look or a retry).
begin;
select plan(3);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('k', '{}', 'pr-exp', expires_in => '1 minute') as expired \gset
set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor._reap_expired() as n \gset
set local conductor.fake_now = '2030-02-01 00:00:00+00';

select is((select status::text from conductor.tasks where id = :expired), 'expired', 'The task expired.');
select is(conductor.prune(interval '7 days'), 0::bigint, 'Without include_failed an expired task is kept.');
select is(conductor.prune(interval '7 days', include_failed => true), 1::bigint, 'With include_failed it goes.');

select * from finish();
rollback;
