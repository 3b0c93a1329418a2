// npm's pg-logical-replication as a whole replication client (LogicalReplicationService and
// PgoutputPlugin: connect, START_REPLICATION, parse, acknowledge), streamed the conformance
// cases by the fake walsender (`pgwire-spec conform --client pg-logical-replication`).
// Prints a hello line, then one JSON line per XLogData it decoded, the "jsonl" client kind's
// protocol (spec/adapter-contract.md, "Clients through the wire"):
//   {"contract": 1, "name": "pg-logical-replication", "version": …, "profile": {…}, "shape": "pg-logical-replication"}
//   {"lsn": "0/2000040", "native": {...the library's message object, as it is...}}
//   {"lsn": "0/2000140", "error": {"message": "..."}}       (its parser threw)
// The suite maps the library's objects to its JSON form with the shape the hello names (one
// table, pgwire_spec/conformance/shapes.py). Column values are kept as the wire's text (pg's
// type parsers replaced by the identity).
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
const { dump } = require(path.join(__dirname, 'native_json.js'));
const pkg = req('pg-logical-replication/package.json');

// What it can negotiate and read: PgoutputPlugin sends proto_version, publication_names and
// messages only (no binary, streaming or two_phase option), its parser knows protocol 1's
// messages and checks no sequence (message level).
const PROFILE = {
  protocol_versions: [1], streaming: 'off', two_phase: false, binary: false, messages: true, origin: true, level: 'message',
};
process.stdout.write(dump({
  contract: 1, name: 'pg-logical-replication', version: pkg.version, profile: PROFILE, shape: 'pg-logical-replication',
}) + '\n');

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
  const line = parsed.error !== undefined ? { lsn, error: { message: parsed.error } } : { lsn, native: parsed.ok };
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
