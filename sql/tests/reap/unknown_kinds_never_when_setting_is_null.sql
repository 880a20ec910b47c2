-- With conductor.settings.unknown_kind_after NULL, reap() never dead-letters a kind, and
-- does not even take the sweep's turn.
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
update conductor.settings set unknown_kind_after = null;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('old', queues => '{sweep-null}', kinds => '{A}') as r1 \gset
select conductor.enqueue('typo', '{}', 'sweep-null') as t \gset
set local conductor.fake_now = '2030-02-01 00:00:00+00';
select count(*) from conductor.heartbeat('old', '{}') \gset
select conductor.reap() as n \gset

select is((select status::text from conductor.tasks where id = :t), 'queued',
  'A task of a kind nobody serves waits a month.');
select is((select unknown_kinds_swept_at from conductor.maintenance), null::timestamptz,
  'No sweep was recorded.');

select * from finish();
rollback;
