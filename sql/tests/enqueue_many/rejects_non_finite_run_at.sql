-- enqueue_many refuses a run_at that is not finite or outside the years 1-9999 as enqueue
-- does (QC106), and writes none of the batch.
begin;
select plan(4);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue_many('[{"kind": "k"}, {"kind": "k", "run_at": "-infinity"}]')$$,
  'QC106', NULL, 'run_at -infinity is refused with QC106.');
select throws_like($$select conductor.enqueue_many('[{"kind": "k"}, {"kind": "k", "run_at": "infinity"}]')$$,
  'invalid run_at infinity%', 'run_at infinity is refused, the message naming it.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "run_at": "12000-01-01T00:00:00Z"}]')$$,
  'QC106', NULL, 'A run_at past the year 9999 is refused with QC106.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'None of the refused batches wrote a task.');

select * from finish();
rollback;
