/** `mesh node`'s discovery and connection options as the node takes them. */
import { assert } from 'chai';
import { MAX_CONNECTIONS } from '../core/net/connection-pruning.ts';
import { PEER_LIMITS } from '../core/net/peer-limits.ts';
import { test } from '../test/harness.ts';
import { parseCommand } from './cli/run.ts';
import { type NodeConfig, nodeCommand, nodeConfig } from './node-command.ts';

const config = (...args: string[]): NodeConfig => nodeConfig(parseCommand(nodeCommand, args).options);

test('mesh node: mDNS is on by default on a devnet only, and --mdns / --no-mdns say otherwise', () => {
  assert.isFalse(config().mdns);
  assert.isTrue(config('--devnet').mdns);
  assert.isFalse(config('--devnet', '--no-mdns').mdns);
  assert.isTrue(config('--mdns').mdns);
  assert.throws(() => config('--mdns', '--no-mdns'), /--mdns and --no-mdns contradict each other/);
});

test('mesh node: listen host, UPnP and connection limits, with their defaults', () => {
  const defaults = config();
  assert.include(defaults, { listenHost: null, upnp: false, maxConnections: MAX_CONNECTIONS, maxConnectionsPerIp: PEER_LIMITS.connectionsPerIp });
  assert.include(config('--listen-host', '::1', '--upnp', '--max-connections', '40', '--max-connections-per-ip', '4'), {
    listenHost: '::1',
    upnp: true,
    maxConnections: 40,
    maxConnectionsPerIp: 4,
  });
  assert.equal(config('--listen-host', '198.18.0.7').listenHost, '198.18.0.7');
});
