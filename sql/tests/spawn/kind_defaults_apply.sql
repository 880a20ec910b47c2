-- A child spawned without options takes its kind's defaults (configure_kind), as enqueue
-- does, not the parent's and not a fixed 'default'; options the spawn gives win.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('sk.child', queue => 'sk-kids', priority => 4, concurrency_key => 'sk-key',
                                timeout => '45 seconds', max_attempts => 3);

select conductor.enqueue('sk.root', '{}', 'sk-parents', priority => 9) as root \gset
select conductor_tests.claim_one('sk-parents') as a \gset

select conductor.spawn(:a, 'plain', 'sk.child') as plain \gset
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = :plain),
  '(sk-kids,4,sk-key,00:00:45,3,3)',
  'A child spawned without options has its kind''s queue, priority, concurrency_key, timeout and max_attempts.');

select conductor.spawn(:a, 'own', 'sk.child', queue => 'sk-own', priority => 0, max_attempts => 1) as own \gset
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts)::text from conductor.tasks where id = :own),
  '(sk-own,0,sk-key,00:00:45,1)', 'The options a spawn gives win; the rest are the kind''s.');

select conductor.spawn(:a, 'bare', 'sk.unconfigured') as bare \gset
select is((select (queue, priority)::text from conductor.tasks where id = :bare), '(default,0)',
  'A child of a kind without a row is on ''default'' with priority 0, whatever its parent''s.');

select * from finish();
rollback;
