-- Pressure / steady state (bench/pressure.py): one transaction of pgbench
-- enqueues 50 tasks into queue 'bench', then claims 50 and completes them, as
-- three autocommitted statements (three commits per 50 tasks). The backlog
-- stays constant, so every row written becomes dead soon after: what an
-- xmin horizon pinned by another session lets pile up.
select count(*) from conductor.enqueue_many((
  select jsonb_agg(jsonb_build_object('kind', 'bench', 'queue', 'bench', 'payload', jsonb_build_object('n', i)))
    from generate_series(1, 50) i));
-- A claim may come back short, even empty: late in a pinned horizon a full
-- scan steps over millions of dead entries, and the other client can take
-- every task due at this claim's start meanwhile (pressure.py reports the
-- tasks left queued so at the end).
select coalesce(quote_literal(array_agg(attempt_id)::text), quote_literal('{}')) as ids
  from conductor.claim(worker_id => 'bench', queues => array['bench'], max_tasks => 50) \gset
select count(*) from conductor.complete_many(cast(:ids as bigint[]));
