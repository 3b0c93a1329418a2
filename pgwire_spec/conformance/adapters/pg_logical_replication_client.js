// npm's pg-logical-replication as a whole replication client (LogicalReplicationService and
// PgoutputPlugin: connect, START_REPLICATION, parse, acknowledge), streamed the conformance
// cases by the fake walsender (`pgwire-spec conform --client pg-logical-replication`).
// Prints one JSON line per XLogData it decoded, the "jsonl" client kind's protocol:
//   {"lsn": "0/2000040", "message": {...the JSON form of spec/message.schema.json...}}
//   {"lsn": "0/2000140", "error": {"message": "..."}}       (its parser threw)
// The mapping from the library's objects to the JSON form is pg_logical_replication_form.js.
// Column values are kept as the wire's text (pg's type parsers replaced by the identity).
//
// usage: node pg_logical_replication_client.js NODE_MODULES_PREFIX HOST PORT USER DBNAME SLOT OPTIONS_JSON
//   OPTIONS_JSON: the pgoutput options to negotiate ({"proto_version": "1", "publication_names": "pub", ...})
'use strict';
const path = require('path');

const [root, host, port, user, database, slot, optionsJson] = process.argv.slice(2);
const req = (name) => require(require.resolve(name, { paths: [root] }));
const pg = req('pg');
pg.types.getTypeParser = () => (text) => text;
const { LogicalReplicationService, PgoutputPlugin } = req('pg-logical-replication');
const { form, dump } = require(path.join(__dirname, 'pg_logical_replication_form.js'));

// PgoutputPlugin sends proto_version, publication_names and messages only: the harness
// (CLIENT_OPTIONS in pg_logical_replication.py) gives it no case that needs another option.
const options = JSON.parse(optionsJson);
const plugin = new PgoutputPlugin({
  protoVersion: Number(options.proto_version),
  publicationNames: options.publication_names.split(','),
  messages: ['on', 'true', '1'].includes(String(options.messages || 'off')),
});
// The library emits ('data', lsn, message) after plugin.parse; a parse error would be thrown
// out of the socket's event handler (the process dies). The harness reports it on the line
// of the XLogData it came from instead, so the rest of the session is still judged.
const parse = plugin.parse.bind(plugin);
plugin.parse = (buffer) => {
  try {
    return { ok: parse(buffer) };
  } catch (err) {
    return { error: `${err && err.name}: ${err && err.message}` };
  }
};

const service = new LogicalReplicationService(
  { host, port: Number(port), user, database },
  { acknowledge: { auto: true, timeoutSeconds: 1 } },
);
service.on('data', (lsn, parsed) => {
  const line = parsed.error !== undefined ? { lsn, error: { message: parsed.error } } : { lsn, message: form(parsed.ok) };
  process.stdout.write(dump(line) + '\n');
});
service.on('error', (err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(2);
});
process.on('SIGTERM', () => process.exit(0));
service.subscribe(plugin, slot).catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(2);
});
