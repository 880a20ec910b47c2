-- A worker that dies while its claim scans are slow leaves its claim position behind
-- (conductor.claim_positions). reap() deletes positions unused for stale_workers_after
-- (their until, epoch seconds of the real clock, is that far past) and keeps the
-- ones a live claimer still relies on.
begin;
select plan(3);

insert into conductor.claim_positions (worker_id, scope, until)
values ('gone-worker', 'q|slow', extract(epoch from clock_timestamp() - interval '2 hours')),
       ('live-worker', 'q|slow', extract(epoch from clock_timestamp() + interval '2 seconds')),
       ('recent-worker', 'q|slow', extract(epoch from clock_timestamp() - interval '1 minute'));

select lives_ok($$select conductor.reap(stale_workers_after => interval '15 minutes')$$, 'reap() runs.');
select is((select array_agg(worker_id order by worker_id) from conductor.claim_positions
            where worker_id in ('gone-worker', 'live-worker', 'recent-worker')),
          array['live-worker', 'recent-worker'],
          'The position unused for two hours is gone; one due within seconds, or past by a minute, stays.');
select is((select count(*) from conductor.claim_positions where worker_id = 'gone-worker'), 0::bigint,
          'Nothing of the dead worker is left.');

select * from finish();
rollback;
