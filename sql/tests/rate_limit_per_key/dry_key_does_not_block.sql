-- The tasks of a dry key do not stand in the way of other keys' tasks at the head of the
-- queue: a claim of one passes them over, by queue and by kind limit, from one queue or
-- from several; a worker for a dry key's queue gets nothing from it at once.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-02 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-dry', per_second => 1, burst => 1, per_key => true) as s \gset
select conductor.enqueue('k', '{}', 'rk-dry', rate_key => 'big', priority => 5) as first_big \gset
select count(conductor.enqueue('k', '{}', 'rk-dry', rate_key => 'big', priority => 5)) as more_big
  from generate_series(1, 50) \gset
select conductor.enqueue('k', '{}', 'rk-dry', rate_key => 'small') as small \gset

select results_eq($$select task_id from conductor.claim('w1', array['rk-dry'], 1)$$,
  format('values (%s::bigint)', :first_big), 'The first claim takes the head: key big''s first task.');
select results_eq($$select task_id from conductor.claim('w1', array['rk-dry'], 1)$$,
  format('values (%s::bigint)', :small),
  'With big dry, a claim of one passes its 50 tasks over and starts small''s, behind them.');
select is_empty($$select * from conductor.claim('w1', array['rk-dry'], 1)$$,
  'With both dry, nothing starts.');
select is_empty($$select * from conductor.claim('w1', null, 5) where queue = 'rk-dry'$$,
  'A claim of every queue takes none of them either.');

-- per kind: a key's limit on a kind, across queues
select conductor.set_rate_limit(kind => 'rk-kind', per_second => 1, burst => 1, per_key => true) as s2 \gset
select conductor.enqueue('rk-kind', '{}', 'rk-kq1', rate_key => 'x') as x1 \gset
select conductor.enqueue('rk-kind', '{}', 'rk-kq2', rate_key => 'x') as x2 \gset
select conductor.enqueue('rk-kind', '{}', 'rk-kq2', rate_key => 'y') as y1 \gset
select results_eq($$select task_id from conductor.claim('w2', array['rk-kq1'], 5)$$,
  format('values (%s::bigint)', :x1), 'A kind''s per-key limit: key x starts once in one queue ...');
select results_eq($$select task_id from conductor.claim('w2', array['rk-kq2'], 5)$$,
  format('values (%s::bigint)', :y1), '... and its other queue starts key y, not key x again.');

select * from finish();
rollback;
