-- conductor._reap_unknown_kinds(), reap's third step, on its own: it dead-letters a kind
-- no live worker of the queue has served for unknown_kind_after and answers how many, once
-- per period (a second call at once sweeps nothing), and leaves an expired lease alone.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-a', queues => '{unknown-step}', kinds => '{A}') as r \gset
select conductor.enqueue('A', '{}', 'unknown-step') as t_lease \gset
select conductor.enqueue('typo', '{}', 'unknown-step') as t_typo \gset
select conductor_tests.claim_one('unknown-step', 'w-a', '60 seconds') as a_lease \gset

set local conductor.fake_now = '2030-01-01 00:10:00+00';
select count(*) from conductor.heartbeat('w-a', '{}') \gset
select is(conductor._reap_unknown_kinds(), 1, 'It dead-letters the task of the kind nobody serves.');
select is((select status::text from conductor.tasks where id = :t_typo), 'dead', 'The typo''s task is dead.');
select is(conductor._reap_unknown_kinds(), 0, 'Called again at once, it sweeps nothing: once per period.');
select is((select status::text from conductor.tasks where id = :t_lease), 'running',
  'An expired lease is not its business: the task still runs.');

select * from finish();
rollback;
