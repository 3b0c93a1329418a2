// The JSON form (spec/message.schema.json) of pg-logical-replication's pgoutput messages,
// field by field: the mapping table from this client's shape to the suite's, one entry per
// message tag (shared by the adapter over the JSON-lines contract and the client streamed
// through the fake walsender, pg_logical_replication_client.js).
'use strict';

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

module.exports = { form, dump };
