-- (d) storage twin: the rows the engine writes for a claim of 50 and its
-- complete_many, in plain statements on bench_twin (bench/twin_schema.sql):
-- lease 50 task rows (FOR UPDATE SKIP LOCKED) and insert their attempts, then
-- finish the tasks and close the attempts. Two statements, two commits per 50.
with picked as (
  select t.id from bench_twin.tasks t
   where t.queue = 'bench' and t.status = 'queued' and t.run_at <= now()
   order by t.priority desc, t.run_at, t.id
   limit 50
     for update skip locked
), claimed as (
  update bench_twin.tasks t
     set status = 'running', attempt = t.attempt + 1, attempt_id = nextval('bench_twin.attempt_ids'),
         claimed_by = 'bench', lease_expires_at = now() + interval '60 seconds',
         started_at = coalesce(t.started_at, now()), expires_at = null
    from picked
   where t.id = picked.id
  returning t.id, t.attempt_id, t.attempt
), recorded as (
  insert into bench_twin.attempts (id, task_id, attempt, worker_id, host, pid, claimed_at)
  select c.attempt_id, c.id, c.attempt, 'bench', 'host', 1, now() from claimed c
  returning id
)
select quote_literal(array_agg(id)::text) as ids from recorded \gset
with finished as (
  update bench_twin.tasks t
     set status = 'succeeded', result = null, error = null, lease_expires_at = null, finished_at = now()
    from bench_twin.attempts a
   where a.id = any (cast(:ids as bigint[])) and t.id = a.task_id and t.attempt_id = a.id and t.status = 'running'
  returning t.attempt_id
)
update bench_twin.attempts a
   set outcome = 'succeeded', finished_at = now(), error = null
  from finished f
 where a.id = f.attempt_id;
