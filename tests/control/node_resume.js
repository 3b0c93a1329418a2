// A Node.js client of the fake walsender, driven only through the process and its HTTP
// control plane (spec/control.openapi.yaml), as a JS team's CI would: start
// `pgwire-spec serve --control`, read the ready file, load a scenario over HTTP, arm a
// disconnect right after the 3rd Commit, stream with npm's pg-logical-replication (create
// the slot, stream, acknowledge each Commit), resume after the cut from the acknowledged
// position, and check that every transaction arrived once, in order.
//
// usage: node node_resume.js NODE_MODULES_PREFIX WORKDIR COMMAND_JSON
//   COMMAND_JSON: the pgwire-spec command line as a JSON array (e.g. ["pgwire-spec"])
// Prints one JSON line with what it saw; exits 1 on a failed check.
'use strict';
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');

const [prefix, workdir, commandJson] = process.argv.slice(2);
const req = (name) => require(require.resolve(name, { paths: [prefix] }));
const { LogicalReplicationService, PgoutputPlugin } = req('pg-logical-replication');
const pg = req('pg');

const N = 8;
const SCENARIO = {
  server: { version: '16.4', database: 'postgres' },
  auth: { method: 'scram-sha-256', users: { replicator: 's3cret' } },
  publications: { pub: ['public.accounts'] },
  tables: {
    'public.accounts': {
      columns: [{ name: 'id', type: 'int4', key: true }, { name: 'name', type: 'text' }],
    },
  },
  transactions: Array.from({ length: N }, (_, i) => ({
    changes: [{ insert: 'public.accounts', new: { id: 100 + i, name: `row ${i}` } }],
  })),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const lsnValue = (text) => { const [hi, lo] = text.split('/'); return BigInt(`0x${hi}`) * 2n ** 32n + BigInt(`0x${lo}`); };

async function http(base, method, route, body) {
  const res = await fetch(base + route, {
    method, headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

async function main() {
  const command = JSON.parse(commandJson);
  const ready = path.join(workdir, 'ready.json');
  const server = spawn(command[0], [...command.slice(1), 'serve', 'accounts', '--quiet',
    '--control', '127.0.0.1:0', '--ready-file', ready], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((r) => server.on('exit', (code) => r(code)));
  try {
    for (let i = 0; !fs.existsSync(ready); i++) {
      assert(i < 600, 'serve did not write its ready file within 30 s');
      await sleep(50);
    }
    const info = JSON.parse(fs.readFileSync(ready, 'utf8'));
    const base = info.control;

    // the scenario and the fault, over HTTP only
    let r = await http(base, 'PUT', '/v1/scenario', SCENARIO);
    assert.strictEqual(r.status, 200, r.text);
    r = await http(base, 'POST', '/v1/faults',
      { fault: { action: 'disconnect', kind: 'Commit', after_messages: 3 } });
    assert.strictEqual(r.status, 201, r.text);

    const conn = { host: info.host, port: info.port, user: 'replicator', password: 's3cret', database: 'postgres' };
    const admin = new pg.Client({ ...conn, replication: 'database' });
    await admin.connect();
    await admin.query('CREATE_REPLICATION_SLOT node_slot LOGICAL pgoutput');
    await admin.end();

    // A careful consumer: it applies a transaction once (skips one whose commit it already
    // applied) and acknowledges each Commit after applying it.
    const applied = [];
    let pending = [];
    let lastCommit = 0n;
    let acked = '0/0';
    let skipping = false;
    let starts = 0;
    let skipped = 0;
    let errors = 0;
    const service = new LogicalReplicationService(conn, { acknowledge: { auto: false, timeoutSeconds: 0 } });
    const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ['pub'] });
    service.on('error', () => { errors += 1; });
    service.on('data', async (lsn, msg) => {
      if (msg.tag === 'begin') {
        skipping = lsnValue(msg.commitLsn) <= lastCommit;
        if (skipping) skipped += 1;
        pending = [];
      } else if (msg.tag === 'insert' && !skipping) {
        pending.push(Number(msg.new.id));
      } else if (msg.tag === 'commit') {
        if (!skipping) {
          applied.push(...pending);
          lastCommit = lsnValue(msg.commitLsn);
        }
        acked = lsn;
        await service.acknowledge(lsn);
      }
    });

    // subscribe() settles when the stream ends (here: when the fault cuts it); then go
    // again from the acknowledged position
    let streaming = false;
    const deadline = Date.now() + 60000;
    while (applied.length < N) {
      assert(Date.now() < deadline, `timed out with ${JSON.stringify(applied)}`);
      if (!streaming) {
        streaming = true;
        starts += 1;
        service.subscribe(plugin, 'node_slot', acked).catch(() => {}).finally(() => { streaming = false; });
      }
      await sleep(50);
    }

    // the fake saw the last Commit confirmed (long poll), the cut and two START_REPLICATIONs
    const last = lsnValue(acked);
    const want = `${(last >> 32n).toString(16).toUpperCase()}/${(last & 0xffffffffn).toString(16).toUpperCase()}`;
    r = await http(base, 'GET', `/v1/wait?lsn=${want}&slot=node_slot&timeout=20`);
    assert.strictEqual(r.status, 200, r.text);
    const entries = [];
    for (let offset = 0; ;) {
      r = await http(base, 'GET', `/v1/transcript?offset=${offset}&limit=50`);
      assert.strictEqual(r.status, 200, r.text);
      const page = r.text.split('\n').filter((x) => x).map((x) => JSON.parse(x));
      entries.push(...page);
      offset = Number(r.headers.get('x-next-offset'));
      if (page.length === 0 || offset >= Number(r.headers.get('x-total-count'))) break;
    }
    const events = entries.filter((e) => e.event).map((e) => e.event);
    const startCommands = entries.filter((e) => e.message && typeof e.message.sql === 'string'
      && e.message.sql.startsWith('START_REPLICATION')).length;
    const faults = (await http(base, 'GET', '/v1/faults')).json().faults;
    await service.destroy();

    const result = { applied, starts, errors, skipped, startCommands, acked, events: events.filter((e) => e.startsWith('fault')),
      fired: faults.map((f) => f.fired) };
    console.log(JSON.stringify(result));
    assert.deepStrictEqual(applied, Array.from({ length: N }, (_, i) => 100 + i));
    assert.ok(startCommands >= 2, 'the client never resumed');
    assert.deepStrictEqual(result.events, ['fault:disconnect']);

    r = await http(base, 'POST', '/v1/stop');
    assert.strictEqual(r.status, 202, r.text);
    assert.strictEqual(await exited, 0);
  } finally {
    if (server.exitCode === null) server.kill('SIGTERM');
  }
}

main().then(() => process.exit(0), (e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
