-- enqueue raises QC101 for an empty, blank, padded, missing or too-long kind, and writes nothing.
begin;
select plan(9);

create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok($$select conductor.enqueue('')$$, 'QC101',
  'invalid kind '''': a kind is a non-empty name of at most 200 characters without surrounding spaces, '
  || 'control or format characters (tab, newline, U+202E, ...) or any of < > & " '' `',
  'An empty kind is refused with QC101, the message naming it.');
select throws_ok($$select conductor.enqueue('   ')$$, 'QC101',
  'invalid kind ''   '': a kind is a non-empty name of at most 200 characters without surrounding spaces, '
  || 'control or format characters (tab, newline, U+202E, ...) or any of < > & " '' `',
  'A blank kind is refused with QC101.');
select throws_ok($$select conductor.enqueue(' send_email')$$, 'QC101', NULL,
  'A kind with a leading space is refused with QC101.');
select throws_ok($$select conductor.enqueue('send_email ')$$, 'QC101', NULL,
  'A kind with a trailing space is refused with QC101.');
select throws_ok($$select conductor.enqueue(NULL)$$, 'QC101',
  'invalid kind NULL: a kind is a non-empty name of at most 200 characters without surrounding spaces, '
  || 'control or format characters (tab, newline, U+202E, ...) or any of < > & " '' `',
  'An SQL NULL kind is refused with QC101 and the message says NULL.');
select throws_ok(format('select conductor.enqueue(%L)', repeat('k', 201)), 'QC101', NULL,
  'A kind of 201 characters is refused with QC101.');
select lives_ok(format('select conductor.enqueue(%L)', repeat('k', 200)),
  'A kind of exactly 200 characters is accepted.');
select lives_ok($$select conductor.enqueue('módulo.tâche:Ω')$$,
  'A kind may hold dots, colons and non-ASCII letters inside (enqueue/rejects_hidden_and_markup_kinds: not control, format or markup characters).');

select is((select count(*) from conductor.tasks) - (select n from before_count), 2::bigint,
  'Only the two valid kinds were written.');

select * from finish();
rollback;
