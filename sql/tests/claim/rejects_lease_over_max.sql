-- claim refuses, with QC106 naming the value, a lease longer than conductor.settings.max_lease
-- (one hour unless an admin changed it) and a non-positive one, claiming nothing; a lease of
-- exactly the maximum is granted.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'claim-max') as t \gset

select throws_ok($$select * from conductor.claim('w1', array['claim-max'], 1, '1 hour 1 second')$$, 'QC106',
  'invalid lease 01:00:01: at most 01:00:00 (conductor.settings.max_lease)',
  'A lease over max_lease is refused with QC106, the message naming it and the maximum.');
select throws_ok($$select * from conductor.claim('w1', array['claim-max'], 1, '1000 years')$$, 'QC106',
  'invalid lease 1000 years: at most 01:00:00 (conductor.settings.max_lease)',
  'An absurd lease is refused with QC106.');
select throws_ok($$select * from conductor.claim('w1', array['claim-max'], 1, '-1 second')$$, 'QC106',
  'invalid lease -00:00:01: it must be positive', 'A negative lease is refused with QC106.');
select is((select status::text from conductor.tasks where id = :t), 'queued', 'The refused claims took nothing.');

select is((select lease_expires_at from conductor.claim('w1', array['claim-max'], 1, '1 hour')),
  '2030-01-01 01:00:00+00'::timestamptz, 'A lease of exactly max_lease is granted.');
update conductor.settings set max_lease = interval '2 hours';
select conductor.enqueue('k', '{}', 'claim-max') as t2 \gset
select is((select lease_expires_at from conductor.claim('w1', array['claim-max'], 1, '2 hours')),
  '2030-01-01 02:00:00+00'::timestamptz, 'An admin may raise max_lease, and the longer lease is then granted.');

select * from finish();
rollback;
