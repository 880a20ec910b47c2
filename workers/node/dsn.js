'use strict';
// A DSN as libpq takes it, for node-postgres: a URL (postgresql://...) is passed
// as the connection string; a keyword/value string (`host=... port=... dbname=...`,
// what pyconductor and psql also accept) is read here into pg's options.

const KEYWORDS = {
  host: 'host', hostaddr: 'host', port: 'port', user: 'user', password: 'password', dbname: 'database',
  application_name: 'application_name', options: 'options',
};

// libpq's sslmode as pg's ssl option ('prefer' and 'allow' do not fall back here: no TLS)
const sslOption = (mode) =>
  (['disable', 'allow', 'prefer'].includes(mode) ? false : { rejectUnauthorized: mode.startsWith('verify') });

/** pg.Client / pg.Pool options for `dsn`. */
function pgOptions(dsn) {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(dsn)) return { connectionString: dsn };
  const out = {};
  // key = value, the value bare or in single quotes (\' and \\ escaped)
  const pair = /\s*([a-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))/giy;
  let m;
  let end = 0;
  while ((m = pair.exec(dsn)) !== null) {
    end = pair.lastIndex;
    const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
    const key = m[1].toLowerCase();
    if (KEYWORDS[key]) out[KEYWORDS[key]] = key === 'port' ? Number(value) : value;
    else if (key === 'connect_timeout') out.connectionTimeoutMillis = Number(value) * 1000;
    else if (key === 'sslmode') out.ssl = sslOption(value);
    else throw new Error(`unsupported DSN keyword '${key}'`);
  }
  if (dsn.slice(end).trim() !== '') throw new Error('cannot read the DSN: use a postgresql:// URL or keyword=value pairs');
  return out;
}

module.exports = { pgOptions };
