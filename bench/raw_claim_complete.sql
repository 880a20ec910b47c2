-- (c) raw: lease one row with FOR UPDATE SKIP LOCKED (same claim order as
-- conductor.claim), then mark it done: two statements, two commits per row.
update bench_raw.jobs j
   set status = 'running', attempts = j.attempts + 1, locked_by = 'bench',
       locked_until = now() + interval '60 seconds', started_at = coalesce(j.started_at, now())
 where j.id = (select r.id from bench_raw.jobs r
                where r.queue = 'bench' and r.status = 'queued' and r.run_at <= now()
                order by r.priority desc, r.run_at, r.id
                limit 1
                  for update skip locked)
returning j.id \gset
update bench_raw.jobs
   set status = 'done', result = null, locked_until = null, finished_at = now()
 where id = :id and status = 'running';
