-- set_rate_limit writes one bucket per queue or kind: a new limit starts full (burst
-- tokens, default greatest(1, per_second)); the same limit set again (a worker restarting)
-- changes nothing, not even the tokens; a changed limit keeps the tokens it holds, at most
-- the new burst; per_second NULL removes it (no error when there is none) and its tasks
-- are claimed freely again. As conductor_worker and conductor_admin, not the owner.
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2032-05-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

-- under one a second: an admin's (settings.min_rate_limit; worker_floor.sql)
set local role t_admin;
select conductor.set_rate_limit(queue => 'rl-set', per_second => 0.2) as s \gset
reset role;
set local role t_worker;
select conductor.set_rate_limit(kind => 'rl-set-kind', per_second => 20) as s \gset
reset role;
select results_eq($$select scope, name, per_second, burst, tokens, refilled_at from conductor.rate_limits
                     where name like 'rl-set%' order by scope, name$$,
  $$values ('kind'::text, 'rl-set-kind'::text, 20::double precision, 20::double precision, 20::double precision,
            '2032-05-01 00:00:00+00'::timestamptz),
           ('queue', 'rl-set', 0.2, 1, 1, '2032-05-01 00:00:00+00')$$,
  'A new limit starts full; burst defaults to greatest(1, per_second).');

select count(*) from (select conductor.enqueue('k', '{}', 'rl-set') from generate_series(1, 6)) e \gset
select conductor.set_rate_limit(queue => 'rl-set', per_second => 1, burst => 5) as s \gset
select is((select count(*) from conductor.claim('w1', array['rl-set'], 3)), 1::bigint,
  'Raising the limit keeps the tokens the bucket held (1): one start.');
set local conductor.fake_now = '2032-05-01 00:00:02+00';
select xmin::text as xmin_before from conductor.rate_limits where name = 'rl-set' \gset
set local role t_worker;
select conductor.set_rate_limit(queue => 'rl-set', per_second => 1, burst => 5) as s \gset
reset role;
select results_eq($$select xmin::text, tokens, refilled_at from conductor.rate_limits where name = 'rl-set'$$,
  format($$values (%L::text, 0::double precision, '2032-05-01 00:00:00+00'::timestamptz)$$, :'xmin_before'),
  'The same limit set again writes nothing.');
select is((select count(*) from conductor.claim('w1', array['rl-set'], 10)), 2::bigint,
  'Two seconds at 1 per second: two starts.');

set local conductor.fake_now = '2032-05-01 00:01:00+00';
set local role t_admin;
select conductor.set_rate_limit(queue => 'rl-set', per_second => 1, burst => 2) as s \gset
reset role;
select results_eq($$select per_second, burst, tokens, refilled_at from conductor.rate_limits where name = 'rl-set'$$,
  $$values (1::double precision, 2::double precision, 2::double precision, '2032-05-01 00:01:00+00'::timestamptz)$$,
  'A lower burst caps the tokens refilled so far (60 s worth) at the new burst.');

set local role t_admin;
select conductor.set_rate_limit(queue => 'rl-set') as s \gset
reset role;
select is((select count(*) from conductor.rate_limits where name = 'rl-set'), 0::bigint,
  'per_second NULL removes the limit.');
select is((select count(*) from conductor.claim('w1', array['rl-set'], 10)), 3::bigint,
  'Its tasks are claimed freely again: all three left.');
set local role t_worker;
select lives_ok($$select conductor.set_rate_limit(queue => 'rl-set')$$, 'Removing a limit that is not there is no error.');
select lives_ok($$select conductor.set_rate_limit(kind => 'rl-set-kind', per_second => null)$$,
  'A worker removes a kind''s limit.');
reset role;
select is((select count(*) from conductor.rate_limits where name like 'rl-set%'), 0::bigint, 'No limit is left.');

select * from finish();
rollback;
