-- sample_queues deletes the samples of minutes older than settings.retain_samples, and
-- never backfills further back than it keeps.
begin;
select plan(5);
\ir ../helpers.psql
delete from conductor.queue_samples;
delete from conductor.sample_minutes;
update conductor.settings set retain_samples = interval '1 hour' where one;
set local conductor.fake_now = '2031-03-03 10:00:30+00';
select conductor.enqueue('k', '{}', 'sq-trim') as t \gset
update conductor.tasks set status = 'succeeded', finished_at = '2031-03-03 09:10:00+00' where id = :t;

select is(conductor.sample_queues(), 60, 'With one hour kept, a first sample backfills one hour (09:00 to 09:59).');
select is((select finished from conductor.queue_samples where queue = 'sq-trim'), 1, 'The 09:10 task is counted.');
set local conductor.fake_now = '2031-03-03 10:30:30+00';
select is(conductor.sample_queues(), 30, 'Half an hour later, 30 minutes are written.');
select results_eq(
  $$select count(*), min(minute) from conductor.sample_minutes$$,
  $$values (60::bigint, '2031-03-03 09:30:00+00'::timestamptz)$$,
  'Minutes that began over an hour before the current minute (10:30) are deleted.');
select is((select count(*) from conductor.queue_samples where queue = 'sq-trim'), 0::bigint,
  'The 09:10 row went with its minute.');

select * from finish();
rollback;
