-- A debounced task waits for quiet: why_waiting says due_later with run_at, and that an
-- enqueue of its key moves it, at the latest to first enqueue + debounce_max. Read as
-- conductor_client.
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
set local timezone = 'UTC';
select conductor.register_worker('ww-w', queues => '{ww-deb}') as r \gset
select conductor.enqueue('k', '{}', 'ww-deb', dedupe_key => 'ww-doc-7', debounce => '30 seconds',
                         debounce_max => '5 minutes') as t \gset
select conductor.enqueue('k', '{}', 'ww-deb', dedupe_key => 'ww-doc-8', debounce => '30 seconds') as u \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail, until_at from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('due_later'::text,
            'debounced: due at 2030-01-01 00:00:30+00 once quiet; an enqueue of dedupe_key ''ww-doc-7'' before then moves it later, at the latest to 2030-01-01 00:05:00+00'::text,
            '2030-01-01 00:00:30+00'::timestamptz)$$,
  'A debounced task waits for quiet until its run_at, and says the latest it may move to.');
select results_eq(format('select detail from conductor.why_waiting(array[%s]::bigint[])', :u),
  $$values ('debounced: due at 2030-01-01 00:00:30+00 once quiet; an enqueue of dedupe_key ''ww-doc-8'' before then moves it later, with no latest time (no debounce_max)'::text)$$,
  'Without debounce_max it says there is no latest time.');

select * from finish();
rollback;
