-- enqueue raises QC104 for a queue name outside 1-100 of [A-Za-z0-9_.:/-] starting with a letter or digit.
begin;
select plan(10);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('k', '{}', '')$$, 'QC104',
  'invalid queue '''': a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
  'An empty queue name is refused with QC104, the message naming it.');
select lives_ok($$select conductor.enqueue('k', '{}', NULL)$$,
  'An SQL NULL queue is no queue given: the kind''s, else ''default'' (enqueue/kind_defaults_apply).');
select throws_ok($$select conductor.enqueue('k', '{}', '-jobs')$$, 'QC104', NULL,
  'A queue name starting with a dash is refused with QC104.');
select throws_ok($$select conductor.enqueue('k', '{}', 'my jobs')$$, 'QC104', NULL,
  'A queue name with a space is refused with QC104.');
select throws_ok($$select conductor.enqueue('k', '{}', 'jobs;drop')$$, 'QC104', NULL,
  'A queue name with a semicolon is refused with QC104.');
select throws_ok(format('select conductor.enqueue(%L, %L, %L)', 'k', '{}', repeat('q', 101)), 'QC104', NULL,
  'A queue name of 101 characters is refused with QC104.');
select lives_ok(format('select conductor.enqueue(%L, %L, %L)', 'k', '{}', repeat('q', 100)),
  'A queue name of exactly 100 characters is accepted.');
select lives_ok($$select conductor.enqueue('k', '{}', 'a.b:c/d-e_F9')$$,
  'A queue name may use letters, digits and _ . : / -.');
select lives_ok($$select conductor.enqueue('k', '{}', '9')$$,
  'A one-character queue name is accepted.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 4::bigint,
  'Only the three valid queue names and the NULL one were written.');

select * from finish();
rollback;
