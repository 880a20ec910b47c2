-- Deploy conductor:functions/cron to pg
-- (reworked after v0.2.0; the released body is sql/released/functions/cron@v0.2.0.sql)
--
-- Cron lines: parsing, validation and the next due time, computed in SQL so
-- that scheduling needs no client library. Touches no table; everything here
-- is a pure function of its arguments (and of the server's tz database).
--
-- Public (the contract; docs/cron.md says it at length):
--   conductor.cron_validate(expr)              raises QC301 unless expr is a valid
--                                              cron line that can ever fire
--   conductor.cron_next(expr, after, timezone) the first due time strictly after
--                                              `after`, fields read in the local
--                                              wall-clock time of `timezone`; NULL
--                                              when none comes by the end of the
--                                              engine's time range
--
-- Private (granted to nobody):
--   conductor._cron_parse(expr) -> int[]       the parsed line (layout below),
--                                              immutable: store it, cache it
--   conductor._cron_field(...)  -> int[]       one field's sorted values
--   conductor._cron_next_local(p, ts) -> ts    first matching wall time >= ts
--   conductor._cron_next_parsed(p, after, tz)  cron_next on a parsed line
--   conductor._cron_instants(ts, tz)           the real instants of a wall time
--   conductor._cron_transition(lo, hi, tz)     the offset change in (lo, hi]
--
-- Syntax: 5 fields (minute hour day-of-month month day-of-week) or 6 with a
-- leading seconds field; `*`, lists, ranges, steps (`*/15`, `10-50/10`,
-- `5/10`), JAN-DEC, SUN-SAT, weekday 7 = Sunday, `L` (last day of month) in
-- day-of-month, and @hourly @daily @midnight @weekly @monthly @yearly
-- @annually. Day-of-month and day-of-week combine as in Vixie cron: when
-- neither field starts with `*` a day matches if either matches, else both.
--
-- DST (wall times of `timezone`):
--   gap:     a wall time that does not exist is skipped when the hour field
--            is unrestricted (all 24 hours), else it fires once at the first
--            real instant after the gap (02:30 on spring-forward -> 03:00).
--   overlap: a wall time that happens twice fires at both instants when the
--            hour field is unrestricted (hourly jobs fire every real hour),
--            else only at the first (daylight-time) instant.
--
-- Layout of the parsed line (int[], 1-based), each "next" entry the smallest
-- allowed value >= the index's value, or -1 when there is none:
--   [1..60]    next second for 0..59 (a 5-field line allows second 0 only)
--   [61..120]  next minute for 0..59
--   [121..144] next hour for 0..23
--   [145..175] next day-of-month for 1..31 (without L)
--   [176..187] next month for 1..12
--   [188..194] days from weekday w (0 = Sunday) to the next allowed weekday
--   [195]      flags: 1 dom starts with *, 2 dow starts with *, 4 every hour
--              allowed, 8 six fields (seconds), 16 L in day-of-month
--
-- Time range: cron_next takes an `after` within conductor._time_range()
-- (functions/internal: finite, 0001-01-02 to 9999-12-30 UTC), else QC106
-- naming it, and answers only due times within it: NULL when the line has no
-- due time left by 9999-12-30 00:00 UTC. The search itself may look past the
-- end (into year 10399 at most), never past PostgreSQL's range.
--
-- SQLSTATEs: QC301 invalid cron expression (also: null, or never fires),
--            QC302 invalid timezone, QC106 an `after` outside the time range.

begin;
set local role conductor_owner;

create or replace function conductor._cron_field(
  expr text, field text, token text, lo integer, hi integer, names text[] default null)
  returns integer[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_values integer[] := '{}'::integer[];
  v_part   text;
  v_range  text;
  v_step   integer;
  v_a      integer;
  v_b      integer;
  v_bounds text[];
  v_max    integer := hi;
begin
  -- weekday 7 is Sunday; accept it in ranges (5-7) and fold it onto 0 below
  if field = 'day-of-week' then
    v_max := 7;
  end if;
  foreach v_part in array string_to_array(_cron_field.token, ',') loop
    if v_part = '' then
      raise exception using errcode = 'QC301',
        message = format('invalid cron expression %s: %s field %s has an empty list item',
                         conductor._echo(expr), field, conductor._echo(token));
    end if;
    v_step := 1;
    v_range := v_part;
    if position('/' in v_part) > 0 then
      v_range := split_part(v_part, '/', 1);
      if split_part(v_part, '/', 2) !~ '^[0-9]{1,4}$' or split_part(v_part, '/', 3) <> ''
         or split_part(v_part, '/', 2)::integer = 0 then
        raise exception using errcode = 'QC301',
          message = format('invalid cron expression %s: %s field %s has an invalid step %s',
                           conductor._echo(expr), field, conductor._echo(token), conductor._echo(v_part));
      end if;
      v_step := split_part(v_part, '/', 2)::integer;
    end if;
    if v_range = '*' then
      v_a := lo;
      v_b := hi;
    else
      v_bounds := string_to_array(v_range, '-');
      if array_length(v_bounds, 1) is null or array_length(v_bounds, 1) > 2 then
        raise exception using errcode = 'QC301',
          message = format('invalid cron expression %s: %s field %s has an invalid range %s',
                           conductor._echo(expr), field, conductor._echo(token), conductor._echo(v_part));
      end if;
      for v_i in 1 .. array_length(v_bounds, 1) loop
        if v_bounds[v_i] ~ '^[0-9]{1,4}$' then
          continue;
        elsif names is not null and array_position(names, upper(v_bounds[v_i])) is not null then
          v_bounds[v_i] := (array_position(names, upper(v_bounds[v_i])) - 1 + lo)::text;
        else
          raise exception using errcode = 'QC301',
            message = format('invalid cron expression %s: %s field %s: %s is not a number%s',
                             conductor._echo(expr), field, conductor._echo(token), conductor._echo(v_bounds[v_i]),
                             case when names is not null then ' or a name' else '' end);
        end if;
      end loop;
      v_a := v_bounds[1]::integer;
      if array_length(v_bounds, 1) = 2 then
        v_b := v_bounds[2]::integer;
      elsif v_step > 1 or position('/' in v_part) > 0 then
        v_b := hi;          -- "5/10": from 5 to the end of the range
      else
        v_b := v_a;
      end if;
      if v_a < lo or v_a > v_max or v_b < lo or v_b > v_max then
        raise exception using errcode = 'QC301',
          message = format('invalid cron expression %s: %s field %s is out of range %s-%s',
                           conductor._echo(expr), field, conductor._echo(v_part), lo, v_max);
      end if;
      if v_a > v_b then
        raise exception using errcode = 'QC301',
          message = format('invalid cron expression %s: %s field %s is a decreasing range',
                           conductor._echo(expr), field, conductor._echo(v_part));
      end if;
    end if;
    for v_i in v_a .. v_b by v_step loop
      v_values := v_values || (case when field = 'day-of-week' and v_i = 7 then 0 else v_i end);
    end loop;
  end loop;
  return array(select distinct v from unnest(v_values) as v order by v);
end;
$$;

comment on function conductor._cron_field(text, text, text, integer, integer, text[]) is
$$One field of cron line expr: token (a list of *, n or a-b, each with an optional /step;
names[i] stands for lo + i - 1) as its sorted distinct values in lo..hi (day-of-week also
takes 7, folded onto 0). Raises QC301 naming expr, the field and the bad item. Called by
_cron_parse; immutable, no locks.$$;

-- For each value v of lo..hi, the smallest of vals (sorted ascending) that is
-- >= v, or -1: the "next allowed value" table of one field.
create or replace function conductor._cron_next_values(vals integer[], lo integer, hi integer)
  returns integer[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out integer[] := array_fill(-1, array[hi - lo + 1]);
  v_i   integer := cardinality(vals);
  v_n   integer := -1;
begin
  for v_j in reverse hi .. lo loop
    if v_i > 0 and vals[v_i] = v_j then
      v_n := v_j;
      v_i := v_i - 1;
    end if;
    v_out[1 + v_j - lo] := v_n;
  end loop;
  return v_out;
end;
$$;

comment on function conductor._cron_next_values(integer[], integer, integer) is
$$For each v of lo..hi, the smallest of vals (sorted ascending) that is >= v, or -1: one
field's "next allowed value" table of the parsed line. Called by _cron_parse; immutable,
never raises.$$;

create or replace function conductor._cron_parse(expr text)
  returns integer[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_fields  text[];
  v_line    text;
  v_secs    integer[];
  v_mins    integer[];
  v_hours   integer[];
  v_doms    integer[];
  v_months  integer[];
  v_dows    integer[];
  v_last    boolean := false;
  v_flags   integer := 0;
  v_p       integer[];
  v_i       integer;
  v_dom_tok text;
  v_ok      boolean := false;
  v_mdays   constant integer[] := '{31,29,31,30,31,30,31,31,30,31,30,31}'::integer[];
begin
  if expr is null then
    raise exception using errcode = 'QC301', message = 'invalid cron expression: it is null';
  end if;
  v_line := btrim(expr, E' \t\r\n');
  v_line := case lower(v_line)
              when '@hourly'   then '0 * * * *'
              when '@daily'    then '0 0 * * *'
              when '@midnight' then '0 0 * * *'
              when '@weekly'   then '0 0 * * 0'
              when '@monthly'  then '0 0 1 * *'
              when '@yearly'   then '0 0 1 1 *'
              when '@annually' then '0 0 1 1 *'
              else v_line
            end;
  if v_line like '@%' then
    raise exception using errcode = 'QC301',
      message = format('invalid cron expression %s: unknown shorthand %s', conductor._echo(expr),
                       conductor._echo(v_line)),
      hint = 'Known: @hourly @daily @midnight @weekly @monthly @yearly @annually.';
  end if;
  v_fields := regexp_split_to_array(v_line, '\s+');
  if v_line = '' or array_length(v_fields, 1) not in (5, 6) then
    raise exception using errcode = 'QC301',
      message = format('invalid cron expression %s: expected 5 fields (minute hour day-of-month '
                       'month day-of-week) or 6 with a leading seconds field, got %s',
                       conductor._echo(expr), case when v_line = '' then 0 else array_length(v_fields, 1) end);
  end if;
  if array_length(v_fields, 1) = 6 then
    v_secs := conductor._cron_field(expr, 'second', v_fields[1], 0, 59);
    v_fields := v_fields[2:6];
    v_flags := v_flags | 8;
  else
    v_secs := '{0}';
  end if;
  v_mins := conductor._cron_field(expr, 'minute', v_fields[1], 0, 59);
  v_hours := conductor._cron_field(expr, 'hour', v_fields[2], 0, 23);
  -- L (last day of the month) may stand alone or in a list: "L", "1,15,L"
  v_dom_tok := v_fields[3];
  if v_dom_tok ~* '(^|,)l(,|$)' then
    v_last := true;
    v_dom_tok := array_to_string(
      array_remove(array_remove(string_to_array(v_dom_tok, ','), 'l'), 'L'), ',');
  end if;
  if v_dom_tok = '' then
    v_doms := '{}';
  else
    v_doms := conductor._cron_field(expr, 'day-of-month', v_dom_tok, 1, 31);
  end if;
  v_months := conductor._cron_field(expr, 'month', v_fields[4], 1, 12,
    '{JAN,FEB,MAR,APR,MAY,JUN,JUL,AUG,SEP,OCT,NOV,DEC}');
  v_dows := conductor._cron_field(expr, 'day-of-week', v_fields[5], 0, 6,
    '{SUN,MON,TUE,WED,THU,FRI,SAT}');
  if left(v_fields[3], 1) = '*' then v_flags := v_flags | 1; end if;
  if left(v_fields[5], 1) = '*' then v_flags := v_flags | 2; end if;
  if cardinality(v_hours) = 24 then v_flags := v_flags | 4; end if;
  if v_last then v_flags := v_flags | 16; end if;

  -- Can it ever fire? Only the day-of-month can rule a line out (30 in
  -- February), and only under the AND rule: under the OR rule the weekdays
  -- fire anyway, and every (day, month) pair falls on every weekday within
  -- the 400-year Gregorian cycle.
  if (v_flags & 3) <> 0 and not v_last then
    foreach v_i in array v_months loop
      if exists (select from unnest(v_doms) d where d <= v_mdays[v_i]) then
        v_ok := true;
      end if;
    end loop;
    if not v_ok then
      raise exception using errcode = 'QC301',
        message = format('invalid cron expression %s: it never fires (day-of-month %s does '
                         'not occur in month %s)', conductor._echo(expr), conductor._echo(v_fields[3]),
                         conductor._echo(v_fields[4]));
    end if;
  end if;

  -- the lookup tables: fill each "next" from the top down, walking the
  -- field's sorted values with a pointer
  v_p := conductor._cron_next_values(v_secs, 0, 59)
      || conductor._cron_next_values(v_mins, 0, 59)
      || conductor._cron_next_values(v_hours, 0, 23)
      || conductor._cron_next_values(v_doms, 1, 31)
      || conductor._cron_next_values(v_months, 1, 12)
      || array_fill(-1, array[8]);
  for v_j in 0 .. 6 loop
    for v_i in 0 .. 6 loop
      if (v_j + v_i) % 7 = any (v_dows) then
        v_p[188 + v_j] := v_i;
        exit;
      end if;
    end loop;
  end loop;
  v_p[195] := v_flags;
  return v_p;
end;
$$;

comment on function conductor._cron_parse(text) is
$$Parses cron line expr (5 or 6 fields, or an @ shorthand) into the int[] of 195 entries
laid out in the map of sql/functions/cron.sql. Raises QC301 for a null line, a bad field or
shorthand, or a line that can never fire. Called by cron_validate and cron_next; immutable,
no locks.$$;

-- The first wall time >= ts whose fields match, or null past 400 years.
create or replace function conductor._cron_next_local(p integer[], ts timestamp)
  returns timestamp
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_y     integer := extract(year from ts)::integer;
  v_mo    integer := extract(month from ts)::integer;
  v_d     integer := extract(day from ts)::integer;
  v_h     integer := extract(hour from ts)::integer;
  v_mi    integer := extract(minute from ts)::integer;
  v_s     integer := ceil(extract(second from ts))::integer;
  v_flags integer := p[195];
  v_and   boolean := (p[195] & 3) <> 0;
  v_last  integer;
  v_n     integer;
  v_a     integer;
  v_b     integer;
  v_w     integer;
  v_limit integer := extract(year from ts)::integer + 400;
begin
  loop
    -- carry overflows upward
    if v_s > 59 then v_s := 0; v_mi := v_mi + 1; end if;
    if v_mi > 59 then v_mi := 0; v_h := v_h + 1; end if;
    if v_h > 23 then v_h := 0; v_d := v_d + 1; end if;
    v_last := extract(day from (make_date(v_y, v_mo, 1) + interval '1 month - 1 day'))::integer;
    if v_d > v_last then v_d := 1; v_mo := v_mo + 1; end if;
    if v_mo > 12 then v_mo := 1; v_y := v_y + 1; end if;
    v_last := extract(day from (make_date(v_y, v_mo, 1) + interval '1 month - 1 day'))::integer;
    if v_y > v_limit then
      return null;
    end if;

    -- month
    v_n := p[175 + v_mo];
    if v_n = -1 then
      v_y := v_y + 1; v_mo := 1; v_d := 1; v_h := 0; v_mi := 0; v_s := 0;
      continue;
    elsif v_n <> v_mo then
      v_mo := v_n; v_d := 1; v_h := 0; v_mi := 0; v_s := 0;
      continue;
    end if;

    -- day: the day-of-month side and the day-of-week side
    v_n := -1;
    if v_and then
      -- both must match: alternate until they agree
      v_a := v_d;
      loop
        exit when v_a > v_last;
        v_b := p[144 + v_a];
        if (v_flags & 16) <> 0 and (v_b = -1 or v_b > v_last) then v_b := v_last; end if;
        exit when v_b = -1 or v_b > v_last;
        v_w := extract(dow from make_date(v_y, v_mo, v_b))::integer;
        v_a := v_b + p[188 + v_w];
        if v_a = v_b then v_n := v_a; exit; end if;
      end loop;
    else
      v_a := p[144 + v_d];
      if v_a > v_last then v_a := -1; end if;
      if (v_flags & 16) <> 0 and (v_a = -1 or v_a > v_last) then v_a := v_last; end if;
      v_w := extract(dow from make_date(v_y, v_mo, v_d))::integer;
      v_b := v_d + p[188 + v_w];
      if v_b > v_last then v_b := -1; end if;
      v_n := case when v_a = -1 then v_b when v_b = -1 then v_a else least(v_a, v_b) end;
    end if;
    if v_n = -1 then
      v_d := v_last + 1; v_h := 0; v_mi := 0; v_s := 0;
      continue;
    elsif v_n <> v_d then
      v_d := v_n; v_h := 0; v_mi := 0; v_s := 0;
    end if;

    v_n := p[121 + v_h];
    if v_n = -1 then
      v_h := 24; v_mi := 0; v_s := 0;
      continue;
    elsif v_n <> v_h then
      v_h := v_n; v_mi := 0; v_s := 0;
    end if;

    v_n := p[61 + v_mi];
    if v_n = -1 then
      v_mi := 60; v_s := 0;
      continue;
    elsif v_n <> v_mi then
      v_mi := v_n; v_s := 0;
    end if;

    v_n := p[1 + v_s];
    if v_n = -1 then
      v_s := 60;
      continue;
    end if;
    return make_timestamp(v_y, v_mo, v_d, v_h, v_mi, v_n);
  end loop;
end;
$$;

comment on function conductor._cron_next_local(integer[], timestamp) is
$$The first wall-clock time >= ts (seconds rounded up) that parsed line p matches, or NULL
when none comes within 400 years. Knows no time zone: _cron_next_parsed maps its answer to
instants. Called by _cron_next_parsed; immutable, raises nothing on a line _cron_parse made.$$;

-- The first instant in (lo, hi] whose UTC offset in tz differs from lo's
-- (binary search to the second; the caller knows there is exactly one).
create or replace function conductor._cron_transition(lo timestamptz, hi timestamptz, tz text)
  returns timestamptz
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_lo  timestamptz := lo;
  v_hi  timestamptz := hi;
  v_mid timestamptz;
  v_off interval := (lo at time zone tz) - (lo at time zone 'UTC');
begin
  while v_hi - v_lo > interval '1 second' loop
    v_mid := v_lo + (v_hi - v_lo) / 2;
    v_mid := date_trunc('second', v_mid);
    if (v_mid at time zone tz) - (v_mid at time zone 'UTC') = v_off then
      v_lo := v_mid;
    else
      v_hi := v_mid;
    end if;
  end loop;
  return v_hi;
end;
$$;

comment on function conductor._cron_transition(timestamptz, timestamptz, text) is
$$The first instant in (lo, hi], to the second, whose UTC offset in tz differs from lo's, by
binary search; hi when there is none (the caller knows there is exactly one). Called by
_cron_instants and _cron_next_parsed; immutable.$$;

-- The real instants at which the wall time ts happens in tz: one (early =
-- late), two in a fall-back overlap (early < late), or none in a gap (both
-- null; gap_end is then the first real instant after the gap).
create or replace function conductor._cron_instants(
  ts timestamp, tz text, out early timestamptz, out late timestamptz, out gap_end timestamptz)
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_t   timestamptz := ts at time zone tz;
  v_off interval;
  v_o   interval;
  v_t2  timestamptz;
begin
  if (v_t at time zone tz) <> ts then
    -- nonexistent: find the transition around it
    gap_end := conductor._cron_transition(v_t - interval '3 hours', v_t + interval '3 hours', tz);
    return;
  end if;
  early := v_t;
  late := v_t;
  v_off := ts - (v_t at time zone 'UTC');
  v_o := ((v_t - interval '3 hours') at time zone tz) - ((v_t - interval '3 hours') at time zone 'UTC');
  if v_o <> v_off then
    v_t2 := (ts - v_o) at time zone 'UTC';
    if (v_t2 at time zone tz) = ts then
      early := least(early, v_t2);
      late := greatest(late, v_t2);
    end if;
  end if;
  v_o := ((v_t + interval '3 hours') at time zone tz) - ((v_t + interval '3 hours') at time zone 'UTC');
  if v_o <> v_off then
    v_t2 := (ts - v_o) at time zone 'UTC';
    if (v_t2 at time zone tz) = ts then
      early := least(early, v_t2);
      late := greatest(late, v_t2);
    end if;
  end if;
end;
$$;

comment on function conductor._cron_instants(timestamp, text) is
$$The real instants at which wall time ts happens in tz: early = late for one, early < late
in a fall-back overlap, both NULL for a time in a spring-forward gap, gap_end then the first
instant after it. Looks for an offset change up to 3 hours either side. Called by
_cron_next_parsed; immutable.$$;

create or replace function conductor._cron_next_parsed(p integer[], after timestamptz, tz text)
  returns timestamptz
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_unit     interval := case when (p[195] & 8) <> 0 then interval '1 second' else interval '1 minute' end;
  v_every_h  boolean := (p[195] & 4) <> 0;
  v_local    timestamp;
  v_w        timestamp;
  v_best     timestamptz;
  v_inst     record;
  v_t        timestamptz;
  v_off_a    interval;
  v_off_b    interval;
  v_off_3    interval;
  v_trans    timestamptz;
  v_i        integer := 0;
begin
  if after is null then
    return null;
  end if;
  v_local := after at time zone tz;
  v_w := date_trunc(case when (p[195] & 8) <> 0 then 'second' else 'minute' end, v_local) + v_unit;

  loop
    v_i := v_i + 1;
    if v_i > 50 then
      return null;  -- defensive: never reached by a line that passed _cron_parse
    end if;
    v_w := conductor._cron_next_local(p, v_w);
    if v_w is null then
      return null;
    end if;
    v_inst := conductor._cron_instants(v_w, tz);
    if v_inst.early is null then
      -- the wall time falls in a spring-forward gap
      if v_every_h then
        v_w := greatest(v_w + v_unit, v_inst.gap_end at time zone tz);
        continue;
      end if;
      -- croniter: move forward whole minutes to the first wall time that exists
      v_t := v_inst.gap_end
             + make_interval(secs => extract(epoch from (v_w - date_trunc('minute', v_w)))::double precision);
      if v_t > after then
        v_best := v_t;
        exit;
      end if;
      v_w := v_w + v_unit;
      continue;
    end if;
    if v_inst.early > after then
      v_best := v_inst.early;
      exit;
    end if;
    if v_every_h and v_inst.late > after then
      v_best := v_inst.late;
      exit;
    end if;
    -- an overlap wall time whose first instant has passed: skip the wall
    -- times whose first instant is not after `after` either, but never past
    -- the end of the overlap
    v_off_a := v_w - (v_inst.early at time zone 'UTC');
    v_trans := conductor._cron_transition(v_inst.early, v_inst.late, tz);
    v_w := greatest(v_w + v_unit,
                    least(date_trunc(case when (p[195] & 8) <> 0 then 'second' else 'minute' end,
                                     (after at time zone 'UTC') + v_off_a) + v_unit,
                          (v_trans at time zone 'UTC') + v_off_a));
  end loop;

  -- Every-hour lines fire at both instants of a repeated wall time. When
  -- `after` is in the first pass of a fall-back overlap, the second pass of
  -- the wall times already behind it may come before v_best.
  if v_every_h then
    v_off_a := (after at time zone tz) - (after at time zone 'UTC');
    v_off_3 := ((after + interval '3 hours') at time zone tz)
               - ((after + interval '3 hours') at time zone 'UTC');
    v_off_b := (v_best at time zone tz) - (v_best at time zone 'UTC');
    if v_off_3 < v_off_a and v_off_b <> v_off_a then
      v_trans := conductor._cron_transition(after, after + interval '3 hours', tz);
      -- second-pass wall times with an instant after `after`: w > local(after) - delta
      v_w := greatest(
        date_trunc(case when (p[195] & 8) <> 0 then 'second' else 'minute' end,
                   v_local - (v_off_a - v_off_3)) + v_unit,
        v_trans at time zone tz);
      v_w := conductor._cron_next_local(p, v_w);
      if v_w is not null and v_w < (v_trans at time zone 'UTC') + v_off_a then
        v_t := (v_w - v_off_3) at time zone 'UTC';
        if v_t > after and v_t < v_best then
          v_best := v_t;
        end if;
      end if;
    end if;
  end if;
  return v_best;
end;
$$;

comment on function conductor._cron_next_parsed(integer[], timestamptz, text) is
$$cron_next on a parsed line: the first instant strictly after `after` at which p fires in
the wall time of tz, by the DST rules in the map of sql/functions/cron.sql; NULL when after
is NULL or nothing comes within 400 years. tz must be valid (cron_next checks it; else
22023). Called by cron_next; immutable, no locks.$$;

create or replace function conductor.cron_validate(expr text)
  returns void
  language plpgsql immutable parallel safe
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform conductor._cron_parse(cron_validate.expr);
end;
$$;

comment on function conductor.cron_validate(text) is
  'Checks a cron line. Returns nothing when expr is valid; raises QC301 (invalid cron '
  'expression) naming the bad field and value when it is not, when it is null, or when it can '
  'never fire (0 0 30 2 *). Immutable, parallel safe, no locks.';

create or replace function conductor.cron_next(expr text, after timestamptz, timezone text default 'UTC')
  returns timestamptz
  language plpgsql stable parallel safe
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_range  tstzrange := conductor._time_range();
  v_parsed integer[];
  v_next   timestamptz;
begin
  if cron_next.timezone is null then
    raise exception using errcode = 'QC302', message = 'invalid timezone: it is null';
  end if;
  begin
    perform pg_catalog.now() at time zone cron_next.timezone;
  exception when invalid_parameter_value then
    raise exception using errcode = 'QC302',
      message = format('invalid timezone %s', conductor._echo(cron_next.timezone)),
      hint = 'Use an IANA name from pg_timezone_names, e.g. Europe/Berlin or UTC.';
  end;
  v_parsed := conductor._cron_parse(cron_next.expr);
  -- the engine's time range: outside it PostgreSQL's own arithmetic raises (0A000 for
  -- infinity, 22008 near year 294276), and a due time past it is no time a driver can read
  if not (cron_next.after <@ v_range) then
    raise exception using errcode = 'QC106',
      message = pg_catalog.format('invalid after %s: a time is finite, from %s to %s UTC',
                                  conductor._echo(cron_next.after::text),
                                  pg_catalog.to_char(pg_catalog.lower(v_range) at time zone 'UTC', 'YYYY-MM-DD'),
                                  pg_catalog.to_char(pg_catalog.upper(v_range) at time zone 'UTC', 'YYYY-MM-DD')),
      hint = pg_catalog.format('cron_next answers NULL when no due time comes by %s UTC.',
                               pg_catalog.to_char(pg_catalog.upper(v_range) at time zone 'UTC', 'YYYY-MM-DD'));
  end if;
  v_next := conductor._cron_next_parsed(v_parsed, cron_next.after, cron_next.timezone);
  if v_next <@ v_range then
    return v_next;
  end if;
  return null;
end;
$$;

comment on function conductor.cron_next(text, timestamptz, text) is
  'The first due time of cron line expr strictly after `after`, its fields read in the local '
  'wall-clock time of the IANA timezone (default UTC). Works within the engine''s time range '
  '(conductor._time_range(): finite, 0001-01-02 to 9999-12-30 UTC): returns null when after is '
  'null, or when the line has no due time after it by 9999-12-30 00:00 UTC (that instant '
  'included). Raises QC106 naming after when it is outside the range (infinity, -infinity, BC, '
  'past 9999-12-30), QC301 for an invalid, null or never-firing expression and QC302 for an '
  'unknown or null timezone. DST: a nonexistent wall time is skipped when the hour field '
  'allows every hour, else fires at the first instant after the gap; a repeated wall time '
  'fires at both instants when the hour field allows every hour, else at the first. Stable '
  '(reads the tz database), parallel safe, no locks; docs/cron.md.';

-- The helpers are not API: nobody but the owner calls them directly. cron_next and
-- cron_validate run as the owner so that the roles they are granted to can reach
-- the helpers (v0.1.0 ran them as the caller, and they failed for every role).
revoke execute on function conductor._cron_field(text, text, text, integer, integer, text[]) from public;
revoke execute on function conductor._cron_next_values(integer[], integer, integer) from public;
revoke execute on function conductor._cron_parse(text) from public;
revoke execute on function conductor._cron_next_local(integer[], timestamp) from public;
revoke execute on function conductor._cron_transition(timestamptz, timestamptz, text) from public;
revoke execute on function conductor._cron_instants(timestamp, text) from public;
revoke execute on function conductor._cron_next_parsed(integer[], timestamptz, text) from public;
revoke execute on function conductor.cron_next(text, timestamptz, text) from public;
revoke execute on function conductor.cron_validate(text) from public;
grant execute on function conductor.cron_next(text, timestamptz, text) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.cron_validate(text) to conductor_client, conductor_worker, conductor_admin;

commit;
