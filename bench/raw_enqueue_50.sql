-- (b) raw: one 50-row INSERT (1 commit per 50 rows).
insert into bench_raw.jobs (queue, kind, payload)
select 'bench_enq', 'bench', jsonb_build_object('n', i) from generate_series(1, 50) i;
