-- (c) for bench/keys.sh: claim one task, then complete it, two commits, as
-- bench/api_claim_complete.sql, but a claim that comes back empty does not abort
-- the run: with a key per task, two claimers probing the same first key both
-- find it ready, one locks it and the other gets nothing this time (as in
-- v0.2.0). The rate is the tasks finished, counted after the run.
select coalesce((select attempt_id from conductor.claim(worker_id => 'bench', queues => array['bench'], max_tasks => 1)), 0)
       as attempt_id \gset
select conductor.complete(:attempt_id, null) where :attempt_id > 0;
