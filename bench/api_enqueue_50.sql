-- (b) API: 50 tasks in one enqueue_many call (1 commit per 50 tasks).
-- The batch is built in SQL, as the raw variant builds its rows.
select count(*) from conductor.enqueue_many((
  select jsonb_agg(jsonb_build_object('kind', 'bench', 'queue', 'bench_enq', 'payload', jsonb_build_object('n', i)))
    from generate_series(1, 50) i));
