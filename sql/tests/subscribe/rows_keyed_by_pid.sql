-- subscribe records a conductor.subscriptions row per distinct topic for this session's
-- backend pid (idempotent, adding to earlier topics); unsubscribe removes the named topics,
-- or every one with no argument, and only this session's: another session's stay.
-- Invalid lists raise QC106.
begin;
select plan(11);
\ir ../helpers.psql
create extension if not exists dblink;

select dblink_connect('other', conductor_tests.conninfo()) as c1 \gset
select pid as other_pid from dblink('other', 'select pg_backend_pid()') as r(pid int) \gset
select (select count(*) from dblink('other', $$select conductor.subscribe(array['orders', '*'])$$) as r(x text)) as s \gset

select lives_ok($$select conductor.subscribe(array['orders', 'invoices', 'orders'])$$,
  'subscribe takes a list of topics (repeats allowed).');
select set_eq(format('select topic, pid from conductor.subscriptions where pid in (%s, %s)', pg_backend_pid(), :other_pid),
  format($$values ('orders', %1$s), ('invoices', %1$s), ('orders', %2$s), ('*', %2$s)$$, pg_backend_pid(), :other_pid),
  'One row per distinct topic, keyed by the subscribing session''s pid.');
select lives_ok($$select conductor.subscribe(array['orders', 'audit'])$$,
  'Subscribing again to a topic is harmless, and adds the new ones.');
select set_eq(format('select topic from conductor.subscriptions where pid = %s', pg_backend_pid()),
  $$values ('orders'), ('invoices'), ('audit')$$, 'The session now has three topics.');

select conductor.unsubscribe(array['orders', 'never-subscribed']);
select set_eq(format('select topic from conductor.subscriptions where pid = %s', pg_backend_pid()),
  $$values ('invoices'), ('audit')$$, 'unsubscribe(topics) removes those topics (unknown ones are ignored).');
select conductor.unsubscribe();
select is_empty(format('select 1 from conductor.subscriptions where pid = %s', pg_backend_pid()),
  'unsubscribe() removes every topic of the session.');
select set_eq(format('select topic from conductor.subscriptions where pid = %s', :other_pid),
  $$values ('orders'), ('*')$$, 'Another session''s subscriptions stay.');

select throws_ok($$select conductor.subscribe(null)$$, 'QC106', null, 'A NULL list is refused with QC106.');
select throws_ok($$select conductor.subscribe('{}')$$, 'QC106', null, 'An empty list is refused with QC106.');
select throws_ok($$select conductor.subscribe(array['ok', null])$$, 'QC106', null,
  'A list holding NULL is refused with QC106.');
select throws_ok(format('select conductor.subscribe(array[%L, %L])', 'ok', repeat('t', 201)), 'QC106', null,
  'A topic over 200 characters (or empty) is refused with QC106.');

select (select count(*) from dblink('other', 'select conductor.unsubscribe()') as r(x text)) as u \gset
select dblink_disconnect('other') as x1 \gset

select * from finish();
rollback;
