-- register_worker judges each queue of its list by enqueue's queue rule: the dashboard
-- and pyconductor status show the list, so a name with a tab, U+202E or markup is refused.
begin;
select plan(3);

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select throws_ok($$select conductor.register_worker('w-q', queues => array['ok', E'a\tb'])$$, 'QC104', null,
  'register_worker refuses a queues list naming a queue with a tab.');
select throws_ok($$select conductor.register_worker('w-q', queues => array['<b>q</b>'])$$, 'QC104', null,
  'register_worker refuses a queues list naming a queue with markup.');
select lives_ok($$select conductor.register_worker('w-q', queues => array['default', 'a.b:c/d-e_9'])$$,
  'A list of valid queue names registers.');

reset role;
select * from finish();
rollback;
