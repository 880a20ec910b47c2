-- (a) raw: one row per transaction (1 commit per task).
insert into bench_raw.jobs (queue, kind, payload) values ('bench_enq', 'bench', '{"n": 1}');
