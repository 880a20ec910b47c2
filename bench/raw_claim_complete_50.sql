-- (d) raw: lease 50 rows in one UPDATE (FOR UPDATE SKIP LOCKED), then mark
-- the 50 done in one UPDATE: two statements, two commits per 50 rows.
with picked as (
  select r.id from bench_raw.jobs r
   where r.queue = 'bench' and r.status = 'queued' and r.run_at <= now()
   order by r.priority desc, r.run_at, r.id
   limit 50
     for update skip locked
), claimed as (
  update bench_raw.jobs j
     set status = 'running', attempts = j.attempts + 1, locked_by = 'bench',
         locked_until = now() + interval '60 seconds', started_at = coalesce(j.started_at, now())
    from picked
   where j.id = picked.id
  returning j.id
)
select quote_literal(array_agg(id)::text) as ids from claimed \gset
update bench_raw.jobs
   set status = 'done', result = null, locked_until = null, finished_at = now()
 where id = any (cast(:ids as bigint[])) and status = 'running';
