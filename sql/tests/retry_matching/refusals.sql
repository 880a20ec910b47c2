-- A bulk action refuses, changing nothing: an empty filter (QC209), a status it cannot take
-- (QC204), an unknown status (QC105), a bad batch, range or action (QC106), a filter that
-- now matches more tasks than the caller confirmed (QC210), and retry's own refusal of a
-- task whose dedupe_key an unfinished task holds (QC205) fails the whole batch.
begin;
select plan(13);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'bk-ref') as c1 \gset
select conductor.enqueue('k', '{}', 'bk-ref') as c2 \gset
select conductor.cancel(:c1) + conductor.cancel(:c2) as cancelled \gset

select throws_ok('select conductor.retry_matching()', 'QC209', null, 'retry_matching refuses an empty filter.');
select throws_ok('select conductor.cancel_matching(expected => 5)', 'QC209', null, 'cancel_matching refuses an empty filter.');
select throws_ok($$select * from conductor.preview_matching('retry')$$, 'QC209', null, 'preview_matching refuses an empty filter.');
select throws_ok($$select conductor.retry_matching(status => 'succeeded')$$, 'QC204', null, 'A succeeded task cannot be retried.');
select throws_ok($$select conductor.cancel_matching(status => 'failed')$$, 'QC204', null, 'A failed task cannot be cancelled.');
select throws_ok($$select conductor.retry_matching(status => 'broken')$$, 'QC105', null, 'An unknown status is refused.');
select throws_ok($$select conductor.retry_matching(queue => 'bk-ref', batch => 0)$$, 'QC106', null, 'A batch of 0 is refused.');
select throws_ok($$select conductor.retry_matching(queue => 'bk-ref', error_contains => '')$$, 'QC106', null,
  'An empty error text is refused.');
select throws_ok($$select conductor.retry_matching(queue => 'bk-ref', enqueued_after => '2031-01-02', enqueued_before => '2031-01-01')$$,
  'QC106', null, 'An empty time range is refused.');
select throws_ok($$select * from conductor.preview_matching('delete', queue => 'bk-ref')$$, 'QC106', null, 'An unknown action is refused.');
select throws_ok($$select conductor.retry_matching(queue => 'bk-ref', expected => 1)$$, 'QC210', null,
  'Two match where the caller confirmed 1: refused.');

select conductor.enqueue('k', '{}', 'bk-ref', dedupe_key => 'bk-held') as holder \gset
update conductor.tasks set dedupe_key = 'bk-held' where id = :c1;
select throws_ok($$select conductor.retry_matching(queue => 'bk-ref', status => 'cancelled')$$, 'QC205', null,
  'A task another unfinished task blocks by its dedupe_key fails the batch.');
select is((select status::text from conductor.tasks where id = :c2), 'cancelled',
  'The other task of that batch stays cancelled: the call changed nothing.');

select * from finish();
rollback;
