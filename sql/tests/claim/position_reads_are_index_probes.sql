-- claim reads and writes a worker's remembered position (conductor.claim_positions) through the
-- primary key only: under a pinned xmin horizon the table keeps every dead row, and a sequential
-- scan would walk them all on every claim. Here every scan counts as slow, so the claims leave a
-- strike, remember a position, claim from it and replace it; then a fast scan deletes the rows.
begin;
select plan(3);
\ir ../helpers.psql
update conductor.settings set claim_slow_scan = '0';
select count(*) from (select conductor.enqueue('k', jsonb_build_object('n', n), 'probe') from generate_series(1, 5) n) e;

select conductor_tests.seq_scans('claim_positions') as seq_before \gset
select count(*) from conductor.claim('probe-w', array['probe'], 1);
select count(*) from conductor.claim('probe-w', array['probe'], 1);
select count(*) from conductor.claim('probe-w', array['probe'], 1);
update conductor.settings set claim_slow_scan = default;
select count(*) from conductor.claim('probe-w', array['probe'], 1);

select is(conductor_tests.seq_scans('claim_positions') - :seq_before, 0::bigint,
  'Four claims read, wrote and deleted positions without a sequential scan of conductor.claim_positions.');
select cmp_ok((select s.idx_scan from pg_stat_xact_user_tables s where s.relid = 'conductor.claim_positions'::regclass),
  '>=', 4::bigint, 'They probed its primary key.');
select is((select count(*) from conductor.tasks where queue = 'probe' and status = 'running'), 4::bigint,
  'Each claimed a task.');

select * from finish();
rollback;
