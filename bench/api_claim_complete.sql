-- (c) API: claim one task, then complete it: two statements, two commits per
-- task (as a worker does: the claim commits before the handler runs). The
-- attempt id travels from claim to complete through \gset. An empty queue
-- makes \gset fail and the run abort, so a drained queue cannot go unnoticed.
select attempt_id from conductor.claim(worker_id => 'bench', queues => array['bench'], max_tasks => 1) \gset
select conductor.complete(:attempt_id, null);
