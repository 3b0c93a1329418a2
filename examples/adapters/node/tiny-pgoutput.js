#!/usr/bin/env node
// A tiny pgoutput decoder in Node, plugged into `pgwire-spec conform` through the
// subprocess contract (spec/adapter-contract.md). No dependency: node >= 18.
//
// It decodes one payload at a time (message level), protocol 1, text values only, with
// Origin, Type and logical messages, and rejects what is not a message: a payload cut
// short, bytes after the last field, a length past the end, an unknown tag or tuple kind.
//
//   pgwire-spec conform --adapter-cmd "node examples/adapters/node/tiny-pgoutput.js"
'use strict';
const readline = require('readline');

// 1. The hello: contract version, name, version, and the profile this decoder claims.
const PROFILE = {
  protocol_versions: [1], streaming: 'off', two_phase: false, binary: false,
  messages: true, origin: true, level: 'message',
};

// 2. A reader that throws on reading past the end (pgoutput's types: docs, "Message Data Types").
class Reader {
  constructor(buf) { this.buf = buf; this.pos = 0; }
  need(n) { if (this.pos + n > this.buf.length) throw new Error(`truncated at byte ${this.pos}`); }
  u8() { this.need(1); return this.buf[this.pos++]; }
  i16() { this.need(2); const v = this.buf.readInt16BE(this.pos); this.pos += 2; return v; }
  i32() { this.need(4); const v = this.buf.readInt32BE(this.pos); this.pos += 4; return v; }
  u32() { this.need(4); const v = this.buf.readUInt32BE(this.pos); this.pos += 4; return v; }
  i64() { this.need(8); const v = this.buf.readBigInt64BE(this.pos); this.pos += 8; return v; }
  lsn() { this.need(8); const hi = this.u32(); const lo = this.u32(); return `${hi.toString(16)}/${lo.toString(16)}`.toUpperCase(); }
  bytes(n) {
    if (n < 0 || this.pos + n > this.buf.length) throw new Error(`length ${n} out of range at byte ${this.pos}`);
    const out = this.buf.subarray(this.pos, this.pos + n); this.pos += n; return out;
  }
  text(n) { return new TextDecoder('utf-8', { fatal: true }).decode(this.bytes(n)); }
  str() {
    const end = this.buf.indexOf(0, this.pos);
    if (end < 0) throw new Error(`string without NUL at byte ${this.pos}`);
    const s = this.text(end - this.pos); this.pos += 1; return s;
  }
  end() { if (this.pos !== this.buf.length) throw new Error(`${this.buf.length - this.pos} trailing bytes`); }
}

function tuple(r) {
  const cols = [];
  for (let n = r.i16(), i = 0; i < n; i++) {
    const kind = String.fromCharCode(r.u8());
    if (kind === 'n' || kind === 'u') cols.push({ kind });
    else if (kind === 't') cols.push({ kind, text: r.text(r.i32()) });
    else throw new Error(`unknown tuple kind ${JSON.stringify(kind)} (binary values are not supported)`);
  }
  return cols;
}

function expectByte(r, allowed) {
  const b = String.fromCharCode(r.u8());
  if (!allowed.includes(b)) throw new Error(`expected one of ${allowed}, found ${JSON.stringify(b)}`);
  return b;
}

// 3. One pgoutput message (docs, "Logical Replication Message Formats") to the JSON form.
function decode(buf) {
  const r = new Reader(buf);
  const tag = String.fromCharCode(r.u8());
  let m;
  switch (tag) {
    case 'B': m = { type: 'Begin', tag, final_lsn: r.lsn(), commit_time: r.i64(), xid: r.u32() }; break;
    case 'C': m = { type: 'Commit', tag, flags: r.u8(), commit_lsn: r.lsn(), end_lsn: r.lsn(), commit_time: r.i64() }; break;
    case 'O': m = { type: 'Origin', tag, origin_lsn: r.lsn(), name: r.str() }; break;
    case 'Y': m = { type: 'Type', tag, xid: null, type_oid: r.u32(), namespace: r.str(), name: r.str() }; break;
    case 'M': {
      const flags = r.u8(); const lsn = r.lsn(); const prefix = r.str();
      if (flags > 1) throw new Error(`message flags ${flags}: expected 0 or 1`);
      m = { type: 'LogicalMessage', tag, xid: null, flags, lsn, prefix, content: Buffer.from(r.bytes(r.i32())).toString('hex') };
      break;
    }
    case 'R': {
      m = { type: 'Relation', tag, xid: null, relation_id: r.u32(), namespace: r.str(), name: r.str(),
        replica_identity: expectByte(r, 'dnfi'), columns: [] };
      for (let n = r.i16(), i = 0; i < n; i++) {
        m.columns.push({ flags: r.u8(), name: r.str(), type_oid: r.u32(), type_modifier: r.i32() });
      }
      break;
    }
    case 'I': m = { type: 'Insert', tag, xid: null, relation_id: r.u32() }; expectByte(r, 'N'); m.new_tuple = tuple(r); break;
    case 'U': {
      m = { type: 'Update', tag, xid: null, relation_id: r.u32(), old_kind: null, old_tuple: null };
      let b = expectByte(r, 'KON');
      if (b !== 'N') { m.old_kind = b; m.old_tuple = tuple(r); b = expectByte(r, 'N'); }
      m.new_tuple = tuple(r);
      break;
    }
    case 'D': m = { type: 'Delete', tag, xid: null, relation_id: r.u32(), old_kind: expectByte(r, 'KO') }; m.old_tuple = tuple(r); break;
    case 'T': {
      const n = r.u32();
      m = { type: 'Truncate', tag, xid: null, options: r.u8(), relation_ids: [] };
      if (m.options > 3) throw new Error(`truncate options ${m.options}: expected bits 1 (cascade) and 2 (restart identity)`);
      for (let i = 0; i < n; i++) m.relation_ids.push(r.u32());
      break;
    }
    default: throw new Error(`unknown message tag ${JSON.stringify(tag)}`);
  }
  r.end();
  return m;
}

// 4. The conversation: one JSON request per line, one answer per line. Timestamps are
// 64-bit: BigInt, written as exact JSON integers.
const dump = (obj) => JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? `\u0000big${v}` : v))
  .replace(/"\\u0000big(-?\d+)"/g, '$1');
process.stdout.write(dump({ contract: 1, name: 'tiny-pgoutput', version: '1.0.0', profile: PROFILE }) + '\n');
readline.createInterface({ input: process.stdin, terminal: false }).on('line', (line) => {
  if (!line.trim()) return;
  const req = JSON.parse(line);
  if (req.context.protocol_version !== 1 || req.context.binary) {
    process.stdout.write(dump({ id: req.id, skip: 'protocol 1 with text values only' }) + '\n');
    return;
  }
  const results = [];
  for (const hex of req.payloads) {
    try { results.push({ message: decode(Buffer.from(hex, 'hex')) }); } catch (err) {
      results.push({ error: { message: err.message } });
      break;
    }
  }
  process.stdout.write(dump({ id: req.id, results }) + '\n');
});
