// npm's pg-logical-replication as its README's first example uses it: a
// LogicalReplicationService with automatic acknowledgement (acknowledge: {auto: true,
// timeoutSeconds: 10}), the PgoutputPlugin (protocol version 1: the plugin sends no
// streaming option), a 'data' listener that applies each change, and the README's
// resubscribe loop (subscribe, log the error, try again 100 ms later). Applying a
// transaction prints the applied hook at its Commit: {"applied": "<end LSN>", "changes": N}.
//
// usage: node node_client.js NODE_MODULES_PREFIX HOST PORT USER SLOT
'use strict';
const [prefix, host, port, user, slotName] = process.argv.slice(2);
const req = (name) => require(require.resolve(name, { paths: [prefix] }));
const { LogicalReplicationService, PgoutputPlugin } = req('pg-logical-replication');

const service = new LogicalReplicationService(
  { host, port: Number(port), user, database: 'postgres' },
  { acknowledge: { auto: true, timeoutSeconds: 10 } },
);
const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ['pub'] });

let changes = 0;
service.on('data', (lsn, log) => {
  if (log.tag === 'begin') changes = 0;
  else if (log.tag === 'insert' || log.tag === 'update' || log.tag === 'delete') changes += 1;
  else if (log.tag === 'commit') {
    process.stdout.write(JSON.stringify({ applied: log.commitEndLsn, changes }) + '\n');
  }
});
service.on('error', (e) => process.stderr.write(`error: ${e.message || e}\n`));

(function proc() {
  service.subscribe(plugin, slotName)
    .catch((e) => {
      console.error(e.message || e);
    })
    .then(() => {
      setTimeout(proc, 100);
    });
})();
