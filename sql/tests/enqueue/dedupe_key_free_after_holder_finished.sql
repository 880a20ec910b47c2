-- Once the holder of a dedupe_key has finished (succeeded, failed, cancelled), the key is free again.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('sync', '{}', 'free-q', dedupe_key => 'sync-1') as first \gset
select conductor_tests.claim_one('free-q') as a1 \gset
select conductor.complete(:a1, '{}') as done \gset

select conductor.enqueue('sync', '{}', 'free-q', dedupe_key => 'sync-1') as second \gset
select isnt(:second::bigint, :first::bigint,
  'After the holder succeeded, the same dedupe_key writes a new task.');
select is((select status::text from conductor.tasks where id = :second), 'queued',
  'The new task is queued.');

select conductor_tests.claim_one('free-q') as a2 \gset
select conductor.fail(:a2, 'boom') as st \gset
select conductor.enqueue('sync', '{}', 'free-q', dedupe_key => 'sync-1') as third \gset
select ok(:third::bigint not in (:first, :second),
  'After the holder failed, the key writes a new task.');

select conductor.cancel(:third) as n \gset
select conductor.enqueue('sync', '{}', 'free-q', dedupe_key => 'sync-1') as fourth \gset
select ok(:fourth::bigint not in (:first, :second, :third),
  'After the holder was cancelled, the key writes a new task.');

select is((select count(*) from conductor.tasks where dedupe_key = 'sync-1'), 4::bigint,
  'Four tasks share the key, at most one of them unfinished.');

select * from finish();
rollback;
