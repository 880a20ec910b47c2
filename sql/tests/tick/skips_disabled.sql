-- A disabled schedule never fires, whatever the clock; the enabled ones beside it do.
begin;
select plan(3);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('off', '* * * * *', 'k', enabled => false) as c \gset
select conductor.create_schedule('on', '* * * * *', 'k') as c \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select results_eq($$select schedule_name from conductor.tick()$$, $$values ('on'::text)$$,
  'Only the enabled schedule fires.');
set local conductor.fake_now = '2030-01-02 00:00:00+00';
select is_empty($$select * from conductor.tick() where schedule_name = 'off'$$,
  'A day later the disabled one still has not fired.');
select is((select count(*) from conductor.schedule_fires where schedule_name = 'off'), 0::bigint,
  'It has no fire history.');

select * from finish();
rollback;
