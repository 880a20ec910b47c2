-- apply_retention forgets the rows of exclusive() names made more than a day ago that no
-- transaction holds (conductor._forget_exclusive_locks), and answers how many.
begin;
select plan(3);

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.exclusive('ar-old');
set local conductor.fake_now = '2030-01-02 12:00:00+00';
select conductor.exclusive('ar-new');

select is((select deleted from conductor.apply_retention() where what = 'exclusive_locks'), 1::bigint,
  'The name made a day and a half ago is forgotten.');
select is_empty($$select from conductor.exclusive_locks where name = 'ar-old'$$, 'Its row is gone.');
select is((select count(*) from conductor.exclusive_locks where name = 'ar-new'), 1::bigint,
  'The name made this morning stays.');

select * from finish();
rollback;
