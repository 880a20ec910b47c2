-- Deploy conductor:schema/rate_keys to pg
--
-- Rate limits per key (issue 30): "at most 10 calls per second per customer",
-- a token bucket per value of a key, beside the per-queue and per-kind buckets.
--
--   conductor.tasks.rate_key        the task's key for per-key rate limits, given
--                                   at enqueue (NULL: no per-key limit applies)
--   conductor._task_spec.rate_key   the same, in a task to enqueue (the last
--                                   attribute: row() constructors of the spec are
--                                   positional)
--   conductor.rate_limits.per_key   the limit is per key: each distinct rate_key of
--                                   the queue's (kind's) tasks has a bucket of its
--                                   own of per_second and burst; the row's own
--                                   tokens are not drawn from
--   conductor.rate_key_buckets      those buckets, one row per (scope, name, key),
--                                   created full by the first claim that needs one
--                                   and deleted by reap() once full again (a
--                                   missing row is a full bucket)
--
-- No index on rate_key: claim reads it on the rows it picks (a row filter when a
-- key is dry) and locks buckets by their primary key; enqueue writes one more
-- nullable column (a bit of the null bitmap when not given) and nothing else.

begin;
set local role conductor_owner;

alter table conductor.tasks add column rate_key text;
comment on column conductor.tasks.rate_key is
  'The task''s key for per-key rate limits (set_rate_limit(per_key => true)): each value has a bucket of its '
  'own per limited queue or kind. NULL: no per-key limit applies to the task.';

alter type conductor._task_spec add attribute rate_key text;

alter table conductor.schedules add column rate_key text;
comment on column conductor.schedules.rate_key is
  'The rate_key of the tasks the schedule fires (NULL: none).';

alter table conductor.rate_limits add column per_key boolean not null default false;
comment on column conductor.rate_limits.per_key is
  'true: the limit is per rate_key (a bucket per key in conductor.rate_key_buckets; tokens and refilled_at '
  'of this row unused); false: one bucket, this row''s.';

create table conductor.rate_key_buckets (
  scope       text not null,
  name        text not null,
  key         text not null,
  tokens      double precision not null,
  refilled_at timestamptz not null,
  primary key (scope, name, key)
);
comment on table conductor.rate_key_buckets is
  'The token bucket of each key of a per-key rate limit (conductor.rate_limits.per_key), written by claim '
  '(inserted full on first use) and deleted by reap() once refilled to its burst: a missing row is a full bucket.';
revoke all on conductor.rate_key_buckets from public;
grant select on conductor.rate_key_buckets to conductor_client, conductor_worker, conductor_admin;

commit;
