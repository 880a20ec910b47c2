-- concurrency_limit is 1 to 10000 and needs a concurrency_key (a limit is per key): QC106,
-- the message naming the value, in enqueue, enqueue_many and configure_kind; nothing stored.
begin;
select plan(9);
\ir ../helpers.psql

select throws_ok($$select conductor.enqueue('k', concurrency_key => 'a', concurrency_limit => 0)$$, 'QC106',
  'invalid concurrency_limit 0 for kind ''k'': it must be from 1 to 10000', 'A limit of 0 is refused.');
select throws_ok($$select conductor.enqueue('k', concurrency_key => 'a', concurrency_limit => 10001)$$, 'QC106',
  'invalid concurrency_limit 10001 for kind ''k'': it must be from 1 to 10000', 'A limit over 10000 is refused.');
select throws_ok($$select conductor.enqueue('k', concurrency_limit => 3)$$, 'QC106',
  'invalid concurrency_limit 3 for kind ''k'': a limit is per concurrency_key, and the task has none',
  'A limit without a key is refused: it would limit nothing.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "concurrency_key": "a"}, {"kind": "k", "concurrency_key": "a", "concurrency_limit": -1}]')$$,
  'QC106', 'invalid concurrency_limit -1 for kind ''k'': it must be from 1 to 10000',
  'enqueue_many refuses the batch with a bad limit.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "concurrency_key": "a", "concurrency_limit": "three"}]')$$,
  'QC106', 'invalid concurrency_limit ''three'' in task #1 of the batch: it must be an integer',
  'enqueue_many names a limit that is not an integer.');
select throws_ok($$select conductor.configure_kind('k', concurrency_limit => 0)$$, 'QC106',
  'invalid concurrency_limit 0 for kind ''k'': it must be from 1 to 10000', 'configure_kind refuses a limit of 0.');
select lives_ok($$select conductor.configure_kind('k2', concurrency_limit => 10000)$$,
  'configure_kind takes a limit of 10000 without a key of the kind''s own.');
select lives_ok($$select conductor.enqueue('k', concurrency_key => 'a', concurrency_limit => 1)$$,
  'A limit of 1 with a key is valid.');
select is((select count(*)::int from conductor.tasks where kind = 'k'), 1, 'Only the valid task was stored.');

select * from finish();
rollback;
