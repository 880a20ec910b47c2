-- Each rule of the dedupe options, with its SQLSTATE, from enqueue and enqueue_many; nothing is written.
begin;
select plan(14);
\ir ../helpers.psql

select throws_ok($$select conductor.enqueue('k', dedupe_window => '1 hour')$$, 'QC120', null,
  'A dedupe option without a dedupe_key is QC120.');
select throws_ok($$select conductor.enqueue('k', debounce => '1 second')$$, 'QC120', null,
  'debounce without a dedupe_key is QC120.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', dedupe_window => '0 s')$$, 'QC106',
  'invalid dedupe_window 00:00:00: it must be from 1 second to 366 days, without months or years',
  'A window of 0 is QC106, naming the value.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', dedupe_window => '1 month')$$, 'QC106', null,
  'A window in months (no fixed length) is QC106.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', dedupe_states => array['succeeded'])$$, 'QC121', null,
  'dedupe_states without the unfinished statuses is QC121.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', dedupe_states => array['queued', 'running', 'waiting', 'done'])$$,
  'QC105', null, 'An unknown status in dedupe_states is QC105.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', on_duplicate => 'overwrite')$$, 'QC106',
  'invalid on_duplicate ''overwrite'': one of ignore, replace, preserve_run_at',
  'An unknown on_duplicate is QC106, naming it.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', debounce => '-1 s')$$, 'QC106', null,
  'A negative debounce is QC106.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', debounce => '1 s', debounce_max => '400 days')$$,
  'QC106', null, 'A debounce_max over 366 days is QC106.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', debounce_max => '1 minute')$$, 'QC122', null,
  'debounce_max without debounce is QC122.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', debounce => '1 minute', debounce_max => '1 second')$$,
  'QC122', null, 'debounce_max under debounce is QC122.');
select throws_ok($$select conductor.enqueue('k', dedupe_key => 'x', debounce => '1 minute', on_duplicate => 'ignore')$$,
  'QC122', null, 'debounce with on_duplicate ignore is QC122.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, {"kind": "k", "dedupe_key": "x", "dedupe_window": "soon"}]')$$,
  'QC106', 'invalid dedupe_window ''soon'' in task #2 of the batch: it must be an interval',
  'enqueue_many names a dedupe_window that is not an interval.');
select is((select count(*) from conductor.tasks where dedupe_key = 'x'), 0::bigint, 'Nothing was written.');

select * from finish();
rollback;
