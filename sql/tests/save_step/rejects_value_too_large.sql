-- save_step refuses a value over conductor.settings.max_result_bytes with QC107, naming its
-- size and the limit, and stores nothing; a value of exactly the limit is stored.
begin;
select plan(4);
\ir ../helpers.psql

select jsonb_build_object('s', repeat('x', 200)) as big \gset
select pg_column_size(:'big'::jsonb) as big_size \gset
update conductor.settings set max_result_bytes = :big_size - 1;

select conductor.enqueue('k', '{}', 'save-big') as t \gset
select conductor_tests.claim_one('save-big') as a \gset

select throws_ok(format($$select conductor.save_step(%s, 'fetch', %L)$$, :a, :'big'), 'QC107',
  format('step ''fetch'': value of %s bytes of jsonb is over the limit of %s bytes (conductor.settings.max_result_bytes)',
         :big_size, :big_size - 1),
  'An oversized step value is refused with QC107, naming the step, its size and the limit.');
select is_empty(format('select * from conductor.steps where task_id = %s', :t), 'Nothing was stored.');
select is((select status::text from conductor.tasks where id = :t), 'running', 'The task still runs: the handler decides.');

select jsonb_build_object('s', repeat('x', 199)) as edge \gset
select is(conductor.save_step(:a, 'fetch', :'edge'), :'edge'::jsonb, 'A value of exactly the limit is stored.');

select * from finish();
rollback;
