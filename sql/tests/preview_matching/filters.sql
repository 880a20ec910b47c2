-- Each part of a bulk filter narrows what preview_matching counts: queue, kind, status,
-- the enqueued and finished time ranges (after inclusive, before exclusive) and a
-- substring of the last attempt's error, ignoring case; retry and cancel count the
-- statuses they take.
begin;
select plan(12);
\ir ../helpers.psql

set local conductor.fake_now = '2031-01-01 00:00:00+00';
select conductor.enqueue('bk-a', '{}', 'bk-f') as a1 \gset
select conductor_tests.claim_one('bk-f') as att1 \gset
select conductor.fail(:att1, 'Boom: disk FULL') as f1 \gset
set local conductor.fake_now = '2031-01-01 01:00:00+00';
select conductor.enqueue('bk-b', '{}', 'bk-f') as b1 \gset
select conductor_tests.claim_one('bk-f') as att2 \gset
select conductor.fail(:att2, 'timeout talking to the bank') as f2 \gset
set local conductor.fake_now = '2031-01-01 02:00:00+00';
select conductor.enqueue('bk-a', '{}', 'bk-f') as a2 \gset
select conductor.cancel(:a2) as c2 \gset
select conductor.enqueue('bk-a', '{}', 'bk-f') as q1 \gset
select conductor.enqueue('bk-a', '{}', 'bk-other') as o1 \gset
select conductor.cancel(:o1) as co \gset

select is((select (matching, sample_ids)::text from conductor.preview_matching('retry', queue => 'bk-f')),
  format('(3,"{%s,%s,%s}")', :a2, :b1, :a1),
  'By queue: the three finished tasks retry takes, newest first; not the queued one nor another queue''s.');
select is((select matching from conductor.preview_matching('cancel', queue => 'bk-f')), 1::bigint,
  'cancel counts only the unfinished task of the queue.');
select is((select matching from conductor.preview_matching('retry', kind => 'bk-a')), 3::bigint,
  'By kind, across queues.');
select is((select matching from conductor.preview_matching('retry', queue => 'bk-f', status => 'failed')), 2::bigint,
  'By status.');
select is((select matching from conductor.preview_matching('retry', queue => 'bk-f',
  enqueued_after => '2031-01-01 01:00:00+00', enqueued_before => '2031-01-01 02:00:00+00')), 1::bigint,
  'By enqueued time: after inclusive, before exclusive.');
select is((select matching from conductor.preview_matching('retry', queue => 'bk-f',
  finished_after => '2031-01-01 01:00:00+00')), 2::bigint,
  'By finished time.');
select is((select matching from conductor.preview_matching('cancel', queue => 'bk-f',
  finished_before => '2032-01-01 00:00:00+00')), 0::bigint,
  'An unfinished task is outside every finished range.');
select is((select sample_ids from conductor.preview_matching('retry', error_contains => 'disk full')), array[:a1]::bigint[],
  'By a substring of the last attempt''s error, ignoring case.');
select is((select matching from conductor.preview_matching('retry', error_contains => 'nothing like this')), 0::bigint,
  'An error text no attempt holds matches nothing.');
select is((select (matching, sample_ids)::text from conductor.preview_matching('retry', queue => 'bk-f', status => 'dead')),
  '(0,)', 'No match: a count of 0 and no sample.');
select is((select pg_catalog.cardinality(sample_ids) from conductor.preview_matching('retry', queue => 'bk-f', sample => 2)), 2,
  'The sample is bounded.');
select is((select matching from conductor.preview_matching('retry', kind => 'bk-a', queue => 'bk-f', status => 'cancelled',
  enqueued_after => '2031-01-01 00:00:00+00', finished_before => '2031-01-02 00:00:00+00')), 1::bigint,
  'The parts of a filter combine with and.');

select * from finish();
rollback;
