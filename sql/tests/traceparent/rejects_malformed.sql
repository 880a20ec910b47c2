-- A traceparent is W3C Trace Context's version-traceid-parentid-flags in lowercase hex
-- (2, 32, 16 and 2 digits), the version not ff, neither id all zeros. Anything else is
-- refused with QC106 (invalid argument), the message naming the value, and nothing is
-- written: enqueue, enqueue_many (the detail naming the task) and spawn alike.
begin;
select plan(14);
\ir ../helpers.psql

create temp table before_count as select count(*) as n from conductor.tasks;

create function pg_temp.refused(tp text) returns text language plpgsql as $$
begin
  perform conductor.enqueue('tp.kind', traceparent => tp);
  return 'accepted';
exception when sqlstate 'QC106' then
  return sqlerrm;
end
$$;

select is(pg_temp.refused('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0'),
  'invalid traceparent ''00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0'': a W3C traceparent is '
  'version-traceid-parentid-flags in lowercase hex (2, 32, 16 and 2 digits), the version not ff, neither id all zeros',
  'Short flags are refused with QC106, the message naming the value.');
select isnt(pg_temp.refused('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), 'accepted', 'Version ff is refused.');
select isnt(pg_temp.refused('00-00000000000000000000000000000000-b7ad6b7169203331-01'), 'accepted', 'An all-zero trace id is refused.');
select isnt(pg_temp.refused('00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01'), 'accepted', 'An all-zero parent id is refused.');
select isnt(pg_temp.refused('00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01'), 'accepted', 'Uppercase hex is refused.');
select isnt(pg_temp.refused('00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01'), 'accepted', 'A 31-digit trace id is refused.');
select isnt(pg_temp.refused('00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01'), 'accepted', 'A 15-digit parent id is refused.');
select isnt(pg_temp.refused('0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), 'accepted', 'A one-digit version is refused.');
select isnt(pg_temp.refused('00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01'), 'accepted', 'Other separators are refused.');
select isnt(pg_temp.refused(' 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), 'accepted', 'Surrounding spaces are refused.');
select isnt(pg_temp.refused(''), 'accepted', 'An empty traceparent is refused (NULL is no trace).');

select throws_ok($$select conductor.enqueue_many('[{"kind": "tp.kind"}, {"kind": "tp.kind", "traceparent": "00-xyz"}]')$$,
  'QC106', 'invalid traceparent ''00-xyz'': a W3C traceparent is version-traceid-parentid-flags in lowercase hex '
  '(2, 32, 16 and 2 digits), the version not ff, neither id all zeros',
  'enqueue_many refuses a malformed traceparent the same way.');

select conductor.enqueue('root', '{}', 'tp-malformed') as root \gset
select conductor_tests.claim_one('tp-malformed') as a \gset
select throws_ok(format($$select conductor.spawn(%s, 'kid', 'kid', traceparent => '00-1-2-3')$$, :a), 'QC106', NULL,
  'spawn refuses a malformed traceparent.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 1::bigint,
  'Nothing was written but the spawning root.');

select * from finish();
rollback;
