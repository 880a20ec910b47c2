-- An error message echoes at most the first 100 characters of a bad value, then how long
-- it was (conductor._echo): a megabyte of bad input does not come back as a megabyte of
-- message.
begin;
select plan(6);

create function pg_temp.error_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlstate || ' ' || sqlerrm;
end
$$;

select is(conductor._echo('short'), '''short''', '_echo quotes a short value whole.');
select is(conductor._echo(repeat('x', 150)), '''' || repeat('x', 100) || '''…(150 bytes)',
  '_echo cuts a long value to its first 100 characters and says how long it was.');
select is(conductor._echo(null), 'NULL', '_echo says NULL for an SQL NULL.');

select is(pg_temp.error_of(format('select conductor.enqueue(%L, %L, %L)', 'k', '{}', repeat('q', 1000000))),
  'QC104 invalid queue ''' || repeat('q', 100) || '''…(1000000 bytes): a queue name is 1-100 letters, '
  || 'digits and _ . : / -, starting with a letter or digit',
  'enqueue refuses a queue of a million characters with a message of the first 100 and its length.');
select cmp_ok(length(pg_temp.error_of(format('select conductor.enqueue(%L)', repeat('k', 1000000)))), '<', 300,
  'A kind of a million characters comes back in a short message.');
select cmp_ok(length(pg_temp.error_of(format('select conductor.enqueue_many(%L)',
                                             jsonb_build_array(jsonb_build_object('kind', 'k', 'dedupe_key', repeat('d', 1000000)))))),
  '<', 300, 'enqueue_many refuses a dedupe key of a million bytes in a short message.');

select * from finish();
rollback;
