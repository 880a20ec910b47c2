-- What the caller gives wins over its kind's defaults, field by field; the others still come
-- from the kind.
begin;
select plan(2);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('cw.kind', queue => 'cw-kind-q', priority => 5, concurrency_key => 'cw-kind-key',
                                timeout => '1 hour', max_attempts => 6, max_recoveries => 4);

select conductor.enqueue('cw.kind', queue => 'cw-own-q', priority => -1, concurrency_key => 'cw-own-key',
                         timeout => '5 seconds', max_attempts => 2, max_recoveries => 0) as own \gset
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = :own),
  '(cw-own-q,-1,cw-own-key,00:00:05,2,0)', 'Every value the caller gives is stored, whatever the kind says.');

select conductor.enqueue('cw.kind', priority => 0, timeout => '10 seconds') as some \gset
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = :some),
  '(cw-kind-q,0,cw-kind-key,00:00:10,6,4)',
  'Given values win one by one (priority 0 is a value, not a default); the rest are the kind''s.');

select * from finish();
rollback;
