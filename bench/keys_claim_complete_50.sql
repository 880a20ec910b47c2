-- (d) for bench/keys.sh: claim 50 tasks, then complete_many them, two commits,
-- as bench/api_claim_complete_50.sql, but a claim that comes back empty does
-- not abort the run (see bench/keys_claim_complete.sql). The rate is the tasks
-- finished, counted after the run.
select quote_literal(coalesce(array_agg(attempt_id), '{}')::text) as ids
  from conductor.claim(worker_id => 'bench', queues => array['bench'], max_tasks => 50) \gset
select count(*) from conductor.complete_many(cast(:ids as bigint[]));
