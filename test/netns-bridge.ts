/**
 * Run inside a lab namespace (`ip netns exec NS node test/netns-bridge.ts SOCKET PORT`): serves a
 * Unix socket and forwards each connection to 127.0.0.1:PORT of that namespace. Unix sockets on
 * a path are not namespaced, so the test process outside reaches the node's loopback-only HTTP API
 * without giving the namespace any address or route besides the lab's own.
 */
import { connect, createServer } from 'node:net';

const [socketPath, port] = process.argv.slice(2);
if (socketPath === undefined || port === undefined) throw new Error('usage: netns-bridge.ts SOCKET PORT');

createServer((inbound) => {
  const outbound = connect(Number(port), '127.0.0.1');
  inbound.pipe(outbound).pipe(inbound);
  inbound.on('error', () => outbound.destroy());
  outbound.on('error', () => inbound.destroy());
})
  .listen(socketPath, () => process.stdout.write('ready\n'))
  .on('error', (error) => {
    process.stderr.write(`netns-bridge: ${error.message}\n`);
    process.exit(1);
  });
