-- conductor_worker declares its own kinds, rate limits and registration, and saves its own
-- attempts' log lines; it cannot change or remove another login's (QC208: issue 25), give a
-- kind less retention than settings.min_retention or set a rate under
-- settings.min_rate_limit (QC106), pause a queue (42501), prune (42501) or change the
-- settings (42501). Two worker logins, neither the owner.
begin;
select plan(20);

create role t_worker;
grant conductor_worker to t_worker;
create role t_other;
grant conductor_worker to t_other;

select conductor.enqueue(kind => 'ro-k', queue => 'ro-own') as t \gset
set local role t_other;
select conductor.configure_kind(kind => 'ro-theirs', queue => 'ro-theirs');
select conductor.set_rate_limit(queue => 'ro-theirs', per_second => 10);
select conductor.set_queue_limit(queue => 'ro-theirs', max_running => 10);
select conductor.register_worker(worker_id => 'ro-their-w');
select c.attempt_id as their_att from conductor.claim(worker_id => 'ro-their-w', queues => array['ro-own'], max_tasks => 1) c \gset
reset role;

set local role t_worker;
select lives_ok($$select conductor.configure_kind(kind => 'ro-mine', queue => 'ro-own', retain_succeeded => interval '2 days')$$,
  'A worker declares a kind of its own.');
select lives_ok($$select conductor.set_rate_limit(kind => 'ro-mine', per_second => 5)$$, 'A worker sets a rate limit of its own.');
select lives_ok($$select conductor.register_worker(worker_id => 'ro-my-w')$$, 'A worker registers itself.');
select lives_ok($$select conductor.deregister_worker(worker_id => 'ro-my-w')$$, 'A worker deregisters itself.');
select throws_ok($$select conductor.configure_kind(kind => 'ro-theirs', queue => 'blackhole')$$, 'QC208', null,
  'A worker cannot change a kind another login declared.');
select throws_ok($$select conductor.set_rate_limit(queue => 'ro-theirs', per_second => 100)$$, 'QC208', null,
  'A worker cannot change a rate limit another login set.');
select throws_ok($$select conductor.set_rate_limit(queue => 'ro-theirs')$$, 'QC208', null,
  'A worker cannot remove a rate limit another login set.');
select throws_ok($$select conductor.set_queue_limit(queue => 'ro-theirs', max_running => 1000000)$$, 'QC208', null,
  'A worker cannot change a queue cap another login set.');
select throws_ok($$select conductor.set_queue_limit(queue => 'ro-theirs')$$, 'QC208', null,
  'A worker cannot remove a queue cap another login set.');
select throws_ok($$select conductor.register_worker(worker_id => 'ro-their-w', kinds => '{nothing}')$$, 'QC208', null,
  'A worker cannot replace another login''s worker registration.');
select throws_ok($$select conductor.deregister_worker(worker_id => 'ro-their-w')$$, 'QC208', null,
  'A worker cannot deregister another login''s worker.');
select throws_ok(format($$select conductor.save_log(attempt_id => %s, lines => '[]')$$, :their_att), 'QC208', null,
  'A worker cannot write log lines into another login''s worker''s attempt.');
select throws_ok($$select conductor.configure_kind(kind => 'ro-mine2', retain_succeeded => interval '0')$$, 'QC106', null,
  'A worker cannot give a kind less retention than settings.min_retention.');
select throws_ok($$select conductor.set_rate_limit(queue => 'ro-own', per_second => 1e-300)$$, 'QC106', null,
  'A worker cannot set a rate under settings.min_rate_limit (a pause by another name).');
select throws_ok($$select conductor.pause_queue(queue => 'ro-own')$$, '42501', null, 'A worker cannot pause a queue.');
select throws_ok($$select conductor.prune(older_than => interval '0')$$, '42501', null, 'A worker cannot prune.');
select throws_ok($$select conductor.cancel_matching(queue => 'ro-own')$$, '42501', null, 'A worker cannot cancel by filter.');
select throws_ok($$select conductor.retry_matching(queue => 'ro-own')$$, '42501', null, 'A worker cannot retry by filter.');
select throws_ok($$update conductor.settings set min_retention = interval '0'$$, '42501', null,
  'A worker cannot lower the retention floor.');
select throws_ok($$update conductor.settings set min_rate_limit = 0$$, '42501', null,
  'A worker cannot lower the rate floor.');
reset role;

select * from finish();
rollback;
