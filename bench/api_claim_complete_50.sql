-- (d) API: claim 50 tasks in one call, then complete_many the 50: two
-- statements, two commits per 50 tasks. The attempt ids travel as one array
-- literal through \gset (a NULL array, i.e. an empty queue, aborts the run).
select quote_literal(array_agg(attempt_id)::text) as ids
  from conductor.claim(worker_id => 'bench', queues => array['bench'], max_tasks => 50) \gset
select count(*) from conductor.complete_many(cast(:ids as bigint[]));
