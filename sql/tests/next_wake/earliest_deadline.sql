-- next_wake returns when reap next has work: the earliest deadline of a waiting task or lease
-- expiry of a running one, whichever comes first. The fake clock is set in 2001, before any
-- task another test may have committed, so this file's deadlines are the earliest.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2001-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'next-wake') as t1 \gset
select conductor.enqueue('k', '{}', 'next-wake') as t2 \gset
select conductor.enqueue('k', '{}', 'next-wake') as t3 \gset
select conductor_tests.claim_one('next-wake', 'w1', '10 minutes') as a1 \gset
select conductor_tests.claim_one('next-wake', 'w1', '10 minutes') as a2 \gset
select conductor_tests.claim_one('next-wake', 'w1', '10 minutes') as a3 \gset
select state from conductor.suspend(:a1, 'nap', 'sleep', duration => '3 minutes') \gset
select state from conductor.suspend(:a2, 'ev', 'event', 'next-wake-ev') \gset

select is(conductor.next_wake(), '2001-01-01 00:03:00+00'::timestamptz,
  'A sleep ending before a lease expires is the next wake.');
select conductor.complete(:a3) as x \gset
select conductor.reap() as r \gset
set local conductor.fake_now = '2001-01-01 00:03:00+00';
select conductor.reap() as r2 \gset
select ok(conductor.next_wake() is distinct from '2001-01-01 00:03:00+00'::timestamptz,
  'Once reap woke the sleep, it is no longer the next wake.');

select conductor_tests.claim_one('next-wake', 'w1', '30 seconds') as a4 \gset
select is(conductor.next_wake(), '2001-01-01 00:03:30+00'::timestamptz,
  'A lease expiring first is the next wake.');
select conductor.complete(:a4) as y \gset
select conductor.enqueue('k', '{}', 'next-wake') as t5 \gset
select conductor_tests.claim_one('next-wake', 'w1', '1 hour') as a5 \gset
select state from conductor.suspend(:a5, 'ev2', 'event', 'next-wake-ev', timeout => '2 minutes') \gset
select is(conductor.next_wake(), '2001-01-01 00:05:00+00'::timestamptz,
  'An event wait''s timeout is a deadline too; an event wait without one is none.');

select * from finish();
rollback;
