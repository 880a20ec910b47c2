-- A due task whose queue's or kind's bucket holds no whole token waits for the next:
-- why_waiting says rate_limited, one row per dry bucket (the queue's first), until_at when
-- its next token comes (conductor._tokens). Read as conductor_client.
begin;
select plan(3);
\ir ../helpers.psql
set local timezone = 'UTC';
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-rate}') as r \gset
select conductor.enqueue('ww-kind', '{}', 'ww-rate') as first \gset
select conductor.enqueue('ww-kind', '{}', 'ww-rate') as t \gset
select conductor.set_rate_limit(queue => 'ww-rate', per_second => 1, burst => 1);
select conductor.set_rate_limit(kind => 'ww-kind', per_second => 2, burst => 1);
select conductor_tests.claim_one('ww-rate', 'ww-w') as a \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail, until_at from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('rate_limited'::text,
            'the rate limit of queue ''ww-rate'' (1 a second, burst 1) has no token until 2030-01-01 00:00:01+00'::text,
            '2030-01-01 00:00:01+00'::timestamptz),
           ('rate_limited', 'the rate limit of kind ''ww-kind'' (2 a second, burst 1) has no token until 2030-01-01 00:00:00.5+00',
            '2030-01-01 00:00:00.5+00')$$,
  'The first claim drained both buckets: the task waits for each one''s next token.');
reset role;

set local conductor.fake_now = '2030-01-01 00:00:00.5+00';
set local role t_client;
select results_eq(format('select reason, until_at from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('rate_limited'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
  'Half a second on, the kind''s bucket holds a token again; the queue''s does not.');
reset role;

set local conductor.fake_now = '2030-01-01 00:00:01+00';
select conductor.register_worker('ww-w', queues => '{ww-rate}') as r \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'A second on, both hold a token: the task is ready.');
reset role;

select * from finish();
rollback;
