// Adapter for the npm package pg-logical-replication: its PgoutputParser, driven over the
// JSON-lines contract of spec/adapter-contract.md. One parser per case (it keeps the
// relation and type caches a subscriber would have), no protocol context (the parser takes
// none). Column text is kept as text: pg's type parsers are replaced by the identity so the
// wire value can be compared; everything else is what the parser returns, translated into
// the JSON form of spec/message.schema.json.
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

const PG_EPOCH_US = 946684800000000n;
const IDENTITY = { default: 'd', nothing: 'n', full: 'f', index: 'i' };

function lsn(text) {
  if (text === null || text === undefined) return '0/0';
  const [hi, lo] = text.split('/');
  return `${parseInt(hi, 16).toString(16).toUpperCase()}/${parseInt(lo, 16).toString(16).toUpperCase()}`;
}
const time = (t) => (typeof t === 'bigint' ? t - PG_EPOCH_US : t);
const hex = (buf) => Buffer.from(buf).toString('hex');

function value(v) {
  if (v === null) return { kind: 'n' };
  if (v === undefined) return { kind: 'u' };
  if (typeof v === 'string') return { kind: 't', text: v };
  if (v instanceof Uint8Array) return { kind: 'b', hex: hex(v) };
  return { kind: 't', text: String(v) };
}
// in the relation's column order: the parser returns an object keyed by column name, and
// a JavaScript object lists integer-like keys (a column named "0") first
const tuple = (obj, relation) => relation.columns.map((c) => value(obj[c.name]));
function keyTuple(key, relation) {
  // readKeyTuple keeps only the key columns: the others are gone, shown as 'n'
  return relation.columns.map((c) => (relation.keyColumns.includes(c.name) && key[c.name] !== undefined
    ? value(key[c.name]) : { kind: 'n' }));
}

function form(msg) {
  switch (msg.tag) {
    case 'begin':
      return { type: 'Begin', tag: 'B', final_lsn: lsn(msg.commitLsn), commit_time: time(msg.commitTime), xid: msg.xid };
    case 'commit':
      return { type: 'Commit', tag: 'C', flags: msg.flags, commit_lsn: lsn(msg.commitLsn), end_lsn: lsn(msg.commitEndLsn), commit_time: time(msg.commitTime) };
    case 'origin':
      return { type: 'Origin', tag: 'O', origin_lsn: lsn(msg.originLsn), name: msg.originName };
    case 'type':
      return { type: 'Type', tag: 'Y', xid: null, type_oid: msg.typeOid, namespace: msg.typeSchema, name: msg.typeName };
    case 'relation':
      return {
        type: 'Relation', tag: 'R', xid: null, relation_id: msg.relationOid, namespace: msg.schema, name: msg.name,
        replica_identity: IDENTITY[msg.replicaIdentity],
        columns: msg.columns.map((c) => ({ flags: c.flags, name: c.name, type_oid: c.typeOid, type_modifier: c.typeMod })),
      };
    case 'insert':
      return { type: 'Insert', tag: 'I', xid: null, relation_id: msg.relation.relationOid, new_tuple: tuple(msg.new, msg.relation) };
    case 'update': {
      const oldKind = msg.key ? 'K' : (msg.old ? 'O' : null);
      const old = msg.key ? keyTuple(msg.key, msg.relation) : (msg.old ? tuple(msg.old, msg.relation) : null);
      return { type: 'Update', tag: 'U', xid: null, relation_id: msg.relation.relationOid, old_kind: oldKind, old_tuple: old, new_tuple: tuple(msg.new, msg.relation) };
    }
    case 'delete': {
      const oldKind = msg.key ? 'K' : 'O';
      const old = msg.key ? keyTuple(msg.key, msg.relation) : tuple(msg.old, msg.relation);
      return { type: 'Delete', tag: 'D', xid: null, relation_id: msg.relation.relationOid, old_kind: oldKind, old_tuple: old };
    }
    case 'truncate':
      return {
        type: 'Truncate', tag: 'T', xid: null, options: (msg.cascade ? 1 : 0) | (msg.restartIdentity ? 2 : 0),
        relation_ids: msg.relations.map((r) => (r ? r.relationOid : null)),
      };
    case 'message':
      return { type: 'LogicalMessage', tag: 'M', xid: null, flags: msg.flags, lsn: lsn(msg.messageLsn), prefix: msg.prefix, content: hex(msg.content) };
    default:
      return { type: String(msg.tag) };
  }
}

// JSON with exact 64-bit integers (timestamps are BigInt)
const dump = (obj) => JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? `\u0000big${v}` : v))
  .replace(/"\\u0000big(-?\d+)"/g, '$1');

const PROFILE = {
  protocol_versions: [1], streaming: 'off', two_phase: false, binary: true, messages: true, origin: true, level: 'message',
};
process.stdout.write(dump({ contract: 1, name: 'pg-logical-replication', version: pkg.version, profile: PROFILE }) + '\n');
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  const parser = new PgoutputParser();
  const results = [];
  for (const h of request.payloads) {
    try {
      results.push({ message: form(parser.parse(Buffer.from(h, 'hex'))) });
    } catch (err) {
      results.push({ error: { message: `${err && err.name}: ${err && err.message}` } });
      break;
    }
  }
  process.stdout.write(dump({ id: request.id, results }) + '\n');
});
