-- why_waiting says a task waits for its key's bucket (and when the next token comes),
-- not for another key's; a task without a rate_key is not held back by a per-key limit;
-- reap() forgets the key's bucket once it is full again.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2032-03-04 00:00:00+00';
select conductor.register_worker('rk-w', queues => array['rk-why']) as r \gset

select conductor.set_rate_limit(queue => 'rk-why', per_second => 0.5, burst => 1, per_key => true) as s \gset
select conductor.enqueue('k', '{}', 'rk-why', rate_key => 'acme') as a1 \gset
select conductor.enqueue('k', '{}', 'rk-why', rate_key => 'acme') as a2 \gset
select conductor.enqueue('k', '{}', 'rk-why', rate_key => 'bolt') as b1 \gset
select conductor.enqueue('k', '{}', 'rk-why') as n1 \gset
select results_eq(format($$select task_id from conductor.claim('rk-w', array['rk-why'], 1)$$),
  format('values (%s::bigint)', :a1), 'acme''s first starts.');

select results_eq(format('select reason, until_at from conductor.why_waiting(array[%s]::bigint[])', :a2),
  $$values ('rate_limited'::text, '2032-03-04 00:00:02+00'::timestamptz)$$,
  'acme''s second waits for its key''s bucket, until its next token (2 s at 0.5 a second).');
select matches((select detail from conductor.why_waiting(array[:a2]::bigint[])),
  'rate limit of queue ''rk-why'' for rate_key ''acme''', 'The detail names the queue and the key.');
select results_eq(format('select reason from conductor.why_waiting(array[%s, %s]::bigint[]) order by task_id', :b1, :n1),
  $$values ('ready'::text), ('ready')$$, 'Another key''s task and a task without a key are ready.');

set local conductor.fake_now = '2032-03-04 00:00:02+00';
select conductor.reap() as reaped \gset
select is((select count(*) from conductor.rate_key_buckets where name = 'rk-why'), 0::bigint,
  'Two seconds later acme''s bucket is full again, and reap() forgets it.');

select * from finish();
rollback;
