-- conductor._echo writes the characters a name may not hold (_hidden_char_class) as
-- \uXXXX, so a refused kind holding U+202E or a newline cannot reverse or split the
-- message that names it; plain values are quoted as before.
begin;
select plan(6);

create function pg_temp.error_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlerrm;
end
$$;

select is(conductor._echo('invoice' || chr(8238) || 'fdp.exe'), '''invoice\u202efdp.exe''',
  'U+202E is written as \u202e.');
select is(conductor._echo(E'a\nb\tc' || chr(31) || 'd'), '''a\u000ab\u0009c\u001fd''',
  'A newline, a tab and a C0 control are written escaped.');
select is(conductor._echo(E'o''brien\n'), '''o''''brien\u000a''',
  'A quote is doubled as quote_literal doubles it, and no E-string prefix appears.');
select is(conductor._echo('tag' || chr(917505)), '''tag\U000e0001''',
  'A character above U+FFFF is written as \UXXXXXXXX.');
select is(conductor._echo(repeat(chr(8238), 150)), '''' || repeat('\u202e', 100) || '''…(450 bytes)',
  'A long value is cut to 100 characters before escaping and says its length in bytes.');
select ok(pg_temp.error_of(format('select conductor.enqueue(%L)', E'bad\nkind')) !~ E'\n',
  'enqueue''s message about a kind with a newline is one line.');

select * from finish();
rollback;
