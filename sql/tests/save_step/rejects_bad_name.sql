-- save_step needs a non-empty step name of at most 1000 bytes (QC106), and stores nothing otherwise.
begin;
select plan(5);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'save-name') as t \gset
select conductor_tests.claim_one('save-name') as a \gset

select throws_ok(format($$select conductor.save_step(%s, '', '1')$$, :a), 'QC106', NULL,
  'An empty step name is refused with QC106.');
select throws_ok(format($$select conductor.save_step(%s, NULL, '1')$$, :a), 'QC106', NULL,
  'A NULL step name is refused with QC106.');
select throws_ok(format($$select conductor.save_step(%s, repeat('x', 1001), '1')$$, :a), 'QC106', NULL,
  'A step name of 1001 bytes is refused with QC106.');
select is_empty(format('select * from conductor.steps where task_id = %s', :t),
  'The refused names stored nothing.');
select is(conductor.save_step(:a, repeat('é', 500), '1'), '1'::jsonb,
  'A name of exactly 1000 bytes is accepted.');

select * from finish();
rollback;
