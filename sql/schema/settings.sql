-- Deploy conductor:schema/settings to pg
--
-- The engine's configuration: one row, written by conductor_admin only. No
-- session setting a caller can SET changes what the engine does (v0.1.0 read
-- the clock and the payload limit from session settings, so any login could
-- move the clock or lift the limit); what an operator configures lives here.
--
-- Owns:  table conductor.settings (exactly one row)
-- Read:  by every role (nothing in it is secret); conductor.now() and the
--        limit helpers read it on every call.
-- Write: conductor_admin, with UPDATE (the row cannot be deleted or doubled).

begin;
set local role conductor_owner;

create table conductor.settings (
  one               boolean primary key default true check (one),
  fake_clock        boolean  not null default false,
  max_payload_bytes integer  not null default 1048576 check (max_payload_bytes between 1 and 268435456),
  max_result_bytes  integer  not null default 1048576 check (max_result_bytes between 1 and 268435456),
  max_lease         interval not null default interval '1 hour'
                    check (max_lease between interval '1 second' and interval '7 days'),
  claim_slow_scan   interval not null default interval '1 millisecond'
                    check (claim_slow_scan >= interval '0')
);

comment on table conductor.settings is
  'The engine''s configuration, one row; only conductor_admin may change it.';
comment on column conductor.settings.fake_clock is
  'Tests only: when true, conductor.now() answers the session setting conductor.fake_now when it is set. '
  'Never switch it on in production: any login could then move the engine''s clock.';
comment on column conductor.settings.max_payload_bytes is
  'The largest task or event payload accepted, in bytes of its jsonb form (default 1 MiB).';
comment on column conductor.settings.max_result_bytes is
  'The largest task result or step value accepted, in bytes of its jsonb form (default 1 MiB).';
comment on column conductor.settings.max_lease is
  'The longest lease claim and heartbeat grant at once (default 1 hour).';

comment on column conductor.settings.claim_slow_scan is
  'A full claim scan slower than this counts as slow; two in a row make a connection claim from '
  'a remembered position (functions/claim; default 1 ms).';

insert into conductor.settings default values;

revoke all on conductor.settings from public;
grant select on conductor.settings to conductor_client, conductor_worker, conductor_admin;
grant update on conductor.settings to conductor_admin;

commit;
