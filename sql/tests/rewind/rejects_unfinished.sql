-- rewind refuses an unfinished task (queued, running, waiting) with QC204: a run is
-- rewound once it ended; its steps stay.
begin;
select plan(4);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'rewind-unfinished') as t \gset
select conductor_tests.claim_one('rewind-unfinished') as a \gset
select conductor.save_step(:a, 'charge', '1') as s \gset

select throws_ok(format($$select conductor.rewind(%s, 'charge')$$, :t), 'QC204',
  format('task %s is running; only a finished task can be rewound', :t), 'A running task is refused with QC204.');
select conductor.suspend(:a, 'approval', 'event', event => 'rewind-unfinished-never') as w \gset
select throws_ok(format($$select conductor.rewind(%s, 'charge')$$, :t), 'QC204',
  format('task %s is waiting; only a finished task can be rewound', :t), 'A waiting task is refused with QC204.');
select conductor.enqueue('k', '{}', 'rewind-unfinished') as q \gset
select throws_ok(format($$select conductor.rewind(%s, 'charge')$$, :q), 'QC204',
  format('task %s is queued; only a finished task can be rewound', :q), 'A queued task is refused with QC204, before its steps are looked at.');
select is((select count(*) from conductor.steps where task_id = :t), 1::bigint, 'The waiting task keeps its step.');

select * from finish();
rollback;
