// Adapter for the npm package pg-logical-replication: its PgoutputParser, driven over the
// JSON-lines contract of spec/adapter-contract.md. One parser per case (it keeps the
// relation and type caches a subscriber would have), no protocol context (the parser takes
// none). Column text is kept as text: pg's type parsers are replaced by the identity so the
// wire value can be compared; everything else is what the parser returns, printed as it is
// ({"native": …}) and mapped to the JSON form of spec/message.schema.json by the suite, with
// the shape this hello names (pgwire_spec/conformance/shapes.py, PG_LOGICAL_REPLICATION).
//
// Its profile (in the hello): what PgoutputParser parses — protocol 1 (no streamed or
// two-phase message), text and binary values, logical messages, Origin — at message level
// (it keeps a relation cache to name columns but checks no sequence rule).
'use strict';
const path = require('path');
const readline = require('readline');

const root = process.argv[2] || process.cwd();
const req = (name) => require(require.resolve(name, { paths: [root] }));
const pg = req('pg');
pg.types.getTypeParser = () => (text) => text;
const pkg = req('pg-logical-replication/package.json');
const parserPath = path.join(
  path.dirname(require.resolve('pg-logical-replication/package.json', { paths: [root] })),
  'dist', 'output-plugins', 'pgoutput', 'pgoutput-parser.js');
const { PgoutputParser } = require(parserPath);

const { dump } = require(path.join(__dirname, 'native_json.js'));

const PROFILE = {
  protocol_versions: [1], streaming: 'off', two_phase: false, binary: true, messages: true, origin: true, level: 'message',
};
process.stdout.write(dump({
  contract: 1, name: 'pg-logical-replication', version: pkg.version, profile: PROFILE, shape: 'pg-logical-replication',
}) + '\n');
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  const parser = new PgoutputParser();
  const results = [];
  for (const h of request.payloads) {
    try {
      results.push({ native: parser.parse(Buffer.from(h, 'hex')) });
    } catch (err) {
      results.push({ error: { message: `${err && err.name}: ${err && err.message}` } });
      break;
    }
  }
  process.stdout.write(dump({ id: request.id, results }) + '\n');
});
