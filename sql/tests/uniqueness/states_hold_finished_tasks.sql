-- dedupe_states: a task holds its key in the statuses named, finished ones too, until it is
-- pruned (no window); a retry into a held key is QC205.
begin;
select plan(7);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('sync', '{}', 'us-q', dedupe_key => 'sync:a',
                         dedupe_states => array['queued', 'running', 'waiting', 'succeeded']) as first \gset
select is((select dedupe_until from conductor.tasks where id = :first), 'infinity'::timestamptz,
  'Without a window the task holds its key with no end (until it leaves its states or is pruned).');
select conductor_tests.claim_one('us-q') as a1 \gset
select is(conductor.enqueue('sync', '{}', 'us-q', dedupe_key => 'sync:a',
                            dedupe_states => array['queued', 'running', 'waiting', 'succeeded']),
  :first::bigint, 'A running holder returns its id.');
select conductor.complete(:a1, '{}') as done \gset
set local conductor.fake_now = '2030-03-01 00:00:00+00';
select is(conductor.enqueue('sync', '{}', 'us-q', dedupe_key => 'sync:a',
                            dedupe_states => array['queued', 'running', 'waiting', 'succeeded']),
  :first::bigint, 'Two months after it succeeded it still holds the key.');
select isnt(conductor.enqueue('sync', '{}', 'us-q', dedupe_key => 'sync:a'), :first::bigint,
  'An enqueue without options asks only about unfinished holders: it writes a task.');

-- failed among the states: a failed holder blocks retry of another task of the key
select conductor.enqueue('sync', '{}', 'us-q2', dedupe_key => 'sync:b',
                         dedupe_states => array['queued', 'running', 'waiting', 'failed', 'cancelled']) as b1 \gset
select conductor.cancel(:b1) as n \gset
select is(conductor.enqueue('sync', '{}', 'us-q2', dedupe_key => 'sync:b',
                            dedupe_states => array['queued', 'running', 'waiting', 'failed', 'cancelled']),
  :b1::bigint, 'A cancelled holder holds a key whose states name cancelled.');
delete from conductor.tasks where id = :b1;
select isnt(conductor.enqueue('sync', '{}', 'us-q2', dedupe_key => 'sync:b',
                              dedupe_states => array['queued', 'running', 'waiting', 'failed', 'cancelled']),
  :b1::bigint, 'Once pruned, the key is free.');

-- retry into a key held by a finished holder
select conductor.enqueue('sync', '{}', 'us-q3', dedupe_key => 'sync:c',
                         dedupe_states => array['queued', 'running', 'waiting', 'succeeded']) as c1 \gset
select conductor.cancel(:c1) as n \gset
select conductor.enqueue('sync', '{}', 'us-q3', dedupe_key => 'sync:c',
                         dedupe_states => array['queued', 'running', 'waiting', 'succeeded']) as c2 \gset
select conductor_tests.claim_one('us-q3') as a3 \gset
select conductor.complete(:a3, '{}') as done \gset
select throws_ok(format('select conductor.retry(%s)', :c1), 'QC205', null,
  'Retrying a task whose key a succeeded task of its states holds raises QC205.');

select * from finish();
rollback;
