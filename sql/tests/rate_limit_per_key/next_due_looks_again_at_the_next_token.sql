-- A worker whose claim came back short because a key is dry sleeps until a key's next
-- token can have come (1 / per_second), not for the poll interval, and not in a busy loop.
begin;
select plan(2);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-05 00:00:00+00';

select conductor.set_rate_limit(queue => 'rk-nd', per_second => 0.25, burst => 1, per_key => true) as s \gset
select conductor.enqueue('k', '{}', 'rk-nd', rate_key => 'acme') as a1 \gset
select conductor.enqueue('k', '{}', 'rk-nd', rate_key => 'acme') as a2 \gset
select is((select count(*) from conductor.claim('w', array['rk-nd'], 10)), 1::bigint, 'acme starts one, its burst.');
select is(conductor.next_due(array['rk-nd']), '2032-03-05 00:00:04+00'::timestamptz,
  'next_due: now + 1 / per_second (4 s at 0.25 a second), when a key''s next token may come.');

select * from finish();
rollback;
