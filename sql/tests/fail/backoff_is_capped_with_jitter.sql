-- conductor._backoff: base * factor^(n-1), at most max, less a jitter in [0, 20 %) that is
-- deterministic for a task and retry and differs between tasks.
begin;
select plan(7);

select ok((select bool_and(conductor._backoff(id, 1, null, null, null) > interval '24 seconds'
                       and conductor._backoff(id, 1, null, null, null) <= interval '30 seconds')
             from generate_series(1, 1000) id),
  'The first default backoff is in (24 s, 30 s] for a thousand tasks.');
select ok((select bool_and(conductor._backoff(id, 4, null, null, null) > interval '192 seconds'
                       and conductor._backoff(id, 4, null, null, null) <= interval '240 seconds')
             from generate_series(1, 1000) id),
  'The fourth doubles three times: in (192 s, 240 s].');
select ok((select bool_and(conductor._backoff(id, 20, null, null, null) > interval '48 minutes'
                       and conductor._backoff(id, 20, null, null, null) <= interval '1 hour')
             from generate_series(1, 1000) id),
  'A late retry is capped at one hour, less the jitter.');
select is(conductor._backoff(42, 3, null, null, null), conductor._backoff(42, 3, null, null, null),
  'The jitter is deterministic for a task and retry number.');
select cmp_ok((select count(distinct conductor._backoff(id, 1, null, null, null)) from generate_series(1, 100) id),
  '>', 90::bigint, 'The jitter differs between tasks, so a burst of failures is spread.');
select ok(conductor._backoff(7, 3, '10 seconds', 3, '50 seconds') between interval '40 seconds' and interval '50 seconds',
  'A custom policy applies: 10 s * 3^2 = 90 s, capped at 50 s, less the jitter.');
select ok(conductor._backoff(7, 2, '10 seconds', 3, null) between interval '24 seconds' and interval '30 seconds',
  'A custom base and factor: 10 s * 3 = 30 s, less the jitter.');

select * from finish();
rollback;
