-- Verify conductor:functions/internal on pg

begin;

-- The session setting moves the clock only once an admin switched the fake clock on.
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select 1 / (conductor.now() = pg_catalog.now())::int;
update conductor.settings set fake_clock = true;
select 1 / (conductor.now() = '2030-01-01 00:00:00+00')::int;
select 1 / (conductor.version() ~ '^\d+\.\d+\.\d+$')::int;
select 1 / (conductor._backoff(1, 1, null, null, null) between interval '24 seconds' and interval '30 seconds')::int;
select 1 / (conductor._backoff(1, 20, null, null, null) <= interval '1 hour')::int;
select 1 / (conductor._echo(pg_catalog.repeat('x', 150)) = '''' || pg_catalog.repeat('x', 100) || '''…(150 bytes)')::int;
select 1 / (not 'infinity'::timestamptz <@ conductor._time_range())::int;
-- a policy v0.1.0 could store: the backoff still answers, within 30 days
select 1 / (conductor._backoff(1, 2000000000, '1000000 years', 'NaN', '1000000 years') <= interval '30 days')::int;
select 1 / (conductor.unfinished_statuses() || conductor.finished_statuses()
            = pg_catalog.enum_range(null::conductor.task_status))::int;
select 1 / (conductor._caller() = session_user::text)::int;
select conductor._check_owner('kind', 'verify', null);
select conductor._check_owner('kind', 'verify', session_user::text);

rollback;
