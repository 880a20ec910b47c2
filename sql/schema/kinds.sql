-- Deploy conductor:schema/kinds to pg
--
-- conductor.kinds: the retry policy of a kind, so that every client, in any
-- language, enqueues with the same defaults. A task's own value wins over its
-- kind's; the kind's wins over the engine's (1 attempt, 3 recoveries, backoff
-- 30 s doubling to at most 1 h). Written by conductor.configure_kind.

begin;

create table conductor.kinds (
  kind            text primary key,
  max_attempts    integer,
  max_recoveries  integer,
  backoff_base    interval,
  backoff_factor  double precision,
  backoff_max     interval,
  updated_at      timestamptz not null,
  constraint kinds_kind_not_empty check (kind <> ''),
  constraint kinds_policy_valid check (
    max_attempts >= 1 and max_recoveries >= 0 and backoff_base >= interval '0'
    and backoff_factor >= 1 and backoff_max >= interval '0')
);

comment on table conductor.kinds is
  'Per-kind retry policy; NULL columns fall back to the engine defaults.';

grant select on conductor.kinds to conductor_client, conductor_worker, conductor_admin;

commit;
