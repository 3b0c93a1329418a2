// A library's own objects as JSON, for the suite to map with the client's shape (one table
// per client kind, pgwire_spec/conformance/shapes.py): 64-bit integers (BigInt) exact, byte
// arrays in Node's Buffer form ({"type": "Buffer", "data": [...]}), undefined values left out
// (a column missing from a tuple is an unchanged TOASTed value to the shape).
'use strict';

const dump = (obj) => JSON.stringify(obj, (k, v) => {
  if (typeof v === 'bigint') return `\u0000big${v}`;
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return { type: 'Buffer', data: Array.from(v) };
  return v;
}).replace(/"\\u0000big(-?\d+)"/g, '$1');

module.exports = { dump };
