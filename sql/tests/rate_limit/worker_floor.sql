-- A login without conductor_admin slows a queue or a kind, never stops it (issue 25):
-- set_rate_limit refuses a per_second under conductor.settings.min_rate_limit (1 a second
-- by default) from it with QC106 naming the floor, for a new limit or a change (v0.2.0 took
-- 1e-300 from a worker login, which let one claim through and then none: pausing is
-- pause_queue's, an admin's). The floor itself is accepted; an admin sets less, and lowers
-- the floor; a limit under the floor stored before (by v0.2.0) may be set again as stored.
begin;
select plan(10);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

select is((select min_rate_limit from conductor.settings), 1::double precision,
  'The floor is one start a second by default.');
set local role t_worker;
select throws_ok($$select conductor.set_rate_limit(queue => 'wf-q', per_second => 1e-300, burst => 1)$$, 'QC106',
  'invalid per_second 1e-300 for queue ''wf-q'': a login without conductor_admin sets at least 1 (conductor.settings.min_rate_limit)',
  'A worker login cannot limit a queue to 1e-300 starts a second (QC106, naming the floor).');
select throws_ok($$select conductor.set_rate_limit(kind => 'wf.k', per_second => 0.999)$$, 'QC106', NULL,
  'Nor a kind to just under one a second.');
select lives_ok($$select conductor.set_rate_limit(queue => 'wf-q', per_second => 1, burst => 1)$$,
  'One a second is accepted.');
select throws_ok($$select conductor.set_rate_limit(queue => 'wf-q', per_second => 0.5)$$, 'QC106', NULL,
  'Its own limit cannot go under the floor either.');
reset role;
select is((select (per_second, burst)::text from conductor.rate_limits where name = 'wf-q'), (1, 1)::text,
  'The refused change left the limit as it was.');

set local role t_admin;
select lives_ok($$select conductor.set_rate_limit(queue => 'wf-slow', per_second => 0.001)$$,
  'An admin sets one start every 1000 seconds.');
reset role;

-- a limit under the floor from v0.2.0 (owner NULL), set again exactly by a worker's code
insert into conductor.rate_limits (scope, name, per_second, burst, tokens, refilled_at)
values ('queue', 'wf-old', 0.1, 1, 1, now());
set local role t_worker;
select lives_ok($$select conductor.set_rate_limit(queue => 'wf-old', per_second => 0.1)$$,
  'Setting a v0.2.0 limit under the floor again exactly as stored succeeds (no change)...');
reset role;
select is((select owner from conductor.rate_limits where name = 'wf-old'), 't_worker', '...and claims it.');

update conductor.settings set min_rate_limit = 0.01;
set local role t_worker;
select lives_ok($$select conductor.set_rate_limit(queue => 'wf-q', per_second => 0.01)$$,
  'Once an admin lowers the floor, a worker login may go down to it.');
reset role;

select * from finish();
rollback;
