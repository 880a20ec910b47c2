-- rate_key is 1-1000 bytes (QC106, the message naming the value), in enqueue, enqueue_many
-- and spawn alike; set_rate_limit's per_key is true or false (QC106 for NULL).
begin;
select plan(6);
\ir ../helpers.psql

select throws_ok($$select conductor.enqueue('k', rate_key => '')$$, 'QC106',
  'invalid rate_key '''' for kind ''k'': a key is 1 to 1000 bytes', 'An empty rate_key is QC106, named.');
select throws_like($$select conductor.enqueue('k', rate_key => repeat('x', 1001))$$,
  'invalid rate_key ''xxx%(1001 bytes) for kind%', 'A rate_key over 1000 bytes is refused, named (cut, with its size).');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, {"kind": "k", "rate_key": ""}]')$$, 'QC106',
  null, 'enqueue_many refuses an empty rate_key.');
select lives_ok($$select conductor.enqueue('k', rate_key => repeat('é', 500))$$,
  'A rate_key of 1000 bytes is fine.');
select throws_ok($$select conductor.set_rate_limit(queue => 'rk-bad', per_second => 1, per_key => null)$$, 'QC106',
  'invalid per_key NULL: true (a bucket per rate_key) or false (one bucket)', 'per_key NULL is QC106.');
select is((select count(*) from conductor.rate_limits where name = 'rk-bad'), 0::bigint, 'Nothing was stored.');

select * from finish();
rollback;
