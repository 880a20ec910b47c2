-- claim raises QC123 for a code_versions list it cannot read, echoing it through
-- conductor._echo, and claims nothing. Called as conductor_worker.
begin;
select plan(8);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'cv-bad') as t \gset
create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select throws_ok($$select * from conductor.claim('w', array['cv-bad'], code_versions => '{}')$$, 'QC123',
  'invalid code_versions ''{}'': name the version the worker runs, then those it can still replay, each 1-100 characters without surrounding spaces, control or format characters or markup; or pass NULL',
  'An empty list is QC123, the message naming it.');
select throws_ok($$select * from conductor.claim('w', array['cv-bad'], code_versions => array['v2', null])$$, 'QC123',
  null, 'A list holding NULL is QC123.');
select throws_ok($$select * from conductor.claim('w', array['cv-bad'], code_versions => array[''])$$, 'QC123',
  null, 'An empty name is QC123.');
select throws_ok($$select * from conductor.claim('w', array['cv-bad'], code_versions => array[' v2'])$$, 'QC123',
  null, 'Surrounding spaces are QC123.');
select throws_ok($$select * from conductor.claim('w', array['cv-bad'], code_versions => array[repeat('v', 101)])$$, 'QC123',
  null, 'A name over 100 characters is QC123.');
select throws_like($$select * from conductor.claim('w', array['cv-bad'], code_versions => array[E'v2\u202e'])$$,
  '%\\u202e%', 'A format character is QC123, shown escaped by _echo.');
select throws_ok($$select * from conductor.claim('w', array['cv-bad'], max_tasks => 0, code_versions => array['<b>'])$$,
  'QC123', null, 'Markup is QC123, even for a claim of nothing.');
reset role;
select is((select status::text from conductor.tasks where id = :t), 'queued', 'Nothing was claimed.');

select * from finish();
rollback;
