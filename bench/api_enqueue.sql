-- (a) API: one task per transaction (1 commit per task).
select conductor.enqueue(kind => 'bench', payload => '{"n": 1}', queue => 'bench_enq');
