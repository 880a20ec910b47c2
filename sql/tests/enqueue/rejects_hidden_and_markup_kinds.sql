-- A kind may not hold control characters (C0, DEL, C1), Unicode format characters (bidi
-- controls, zero widths, U+FEFF, tags), line or paragraph separators, or markup: a kind is
-- shown on the dashboard, in logs and in terminals, where such a name forges a line or
-- reorders what is shown. Every kind real applications use stays valid. As conductor_client.
begin;
select plan(30);

create role t_client;
grant conductor_client to t_client;
set local role t_client;

create function pg_temp.refused(kind text, what text) returns text language sql as $$
  select throws_like(pg_catalog.format('select conductor.enqueue(%L)', kind), 'invalid kind %: a kind is a non-empty '
    || 'name of at most 200 characters without surrounding spaces, control or format characters (tab, newline, '
    || 'U+202E, ...) or any of < > & " '' `', pg_catalog.format('A kind with %s is refused with QC101.', what))
$$;
create function pg_temp.code(kind text) returns text language plpgsql as $$
begin
  perform conductor.enqueue(kind);
  return 'ok';
exception when others then
  return sqlstate;
end
$$;

select pg_temp.refused('send' || chr(9) || 'email', 'a tab');
select pg_temp.refused('send_email' || chr(10) || '2026-01-01 INFO forged', 'a newline');
select pg_temp.refused('send' || chr(13) || 'email', 'a carriage return');
select pg_temp.refused('send' || chr(27) || '[31memail', 'an escape (ANSI colours)');
select pg_temp.refused('send' || chr(1) || 'email', 'U+0001');
select pg_temp.refused('send' || chr(127) || 'email', 'DEL');
select pg_temp.refused('send' || chr(133) || 'email', 'NEL (C1)');
select pg_temp.refused('send' || chr(155) || 'email', 'CSI (C1)');
select pg_temp.refused('invoice' || chr(8238) || 'fdp.exe', 'U+202E (right-to-left override)');
select pg_temp.refused('a' || chr(8234) || 'b', 'U+202A (left-to-right embedding)');
select pg_temp.refused('a' || chr(8294) || 'b', 'U+2066 (left-to-right isolate)');
select pg_temp.refused('a' || chr(8207) || 'b', 'U+200F (right-to-left mark)');
select pg_temp.refused('send' || chr(8203) || '_email', 'U+200B (zero width space)');
select pg_temp.refused('send' || chr(8205) || '_email', 'U+200D (zero width joiner)');
select pg_temp.refused('send' || chr(8288) || '_email', 'U+2060 (word joiner)');
select pg_temp.refused(chr(65279) || 'send_email', 'U+FEFF (byte order mark)');
select pg_temp.refused('send' || chr(173) || 'email', 'U+00AD (soft hyphen)');
select pg_temp.refused('send' || chr(8232) || 'email', 'U+2028 (line separator)');
select pg_temp.refused('send' || chr(917601) || 'email', 'U+E0061 (a tag character)');
select pg_temp.refused('<script>alert(1)</script>', 'markup (< and >)');
select pg_temp.refused('a&amp;b', 'an ampersand');
select pg_temp.refused('say"hi"', 'a double quote');
select pg_temp.refused('it''s', 'an apostrophe');
select pg_temp.refused('a`b`', 'a backtick');

select is(array(select pg_temp.code(k) from unnest(array[
    'send_email', 'shop.tasks.send_receipt', 'myapp.jobs.reports:monthly', 'billing:invoice-v2',
    'reports/daily', 'user@eu-west', 'módulo.tâche:Ω', '報告.生成', 'emoji🎉', 'send email',
    'Pkg.Module.Class.method_2']) k),
  array_fill('ok'::text, array[11]),
  'Python dotted paths, Django task paths, names with : - / @, non-ASCII letters, emoji and inner spaces stay valid.');

select throws_like($$select conductor.enqueue_many('[{"kind": "ok"}, {"kind": "a\u202eb"}]')$$,
  'invalid kind %', 'enqueue_many applies the same rule (QC101) to each task of the batch.');
select throws_ok($$select conductor.enqueue_many('[{"kind": "ok"}, {"kind": "a\tb"}]')$$, 'QC101', null,
  'enqueue_many refuses a kind with a tab with QC101.');

reset role;
select is((select count(*) from conductor.tasks where kind <> all (array[
    'send_email', 'shop.tasks.send_receipt', 'myapp.jobs.reports:monthly', 'billing:invoice-v2',
    'reports/daily', 'user@eu-west', 'módulo.tâche:Ω', '報告.生成', 'emoji🎉', 'send email',
    'Pkg.Module.Class.method_2'])), 0::bigint,
  'No refused kind was written.');

select is(conductor._spec_problem(row('a' || chr(8238) || 'b', '{}', 'q', null, null, null, null, null, null, null,
                                      null, null, null, null, null, null, null, null, null)::conductor._task_spec), 'kind',
  '_spec_problem names the kind as the problem.');
select is((select count(*) from generate_series(0, 127) cp where cp > 0 and chr(cp) ~ ('[' || conductor._hidden_char_class() || ']')),
  32::bigint, 'Of ASCII, the 32 control characters (1-31 and DEL) are hidden characters.');

select * from finish();
rollback;
