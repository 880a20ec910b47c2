-- (b) storage twin: one 50-row INSERT into bench_twin.tasks (bench/twin_schema.sql),
-- the rows of bench/raw_enqueue_50.sql.
insert into bench_twin.tasks (queue, kind, payload)
select 'bench_enq', 'bench', jsonb_build_object('n', i) from generate_series(1, 50) i;
