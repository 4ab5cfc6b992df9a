import { multiaddr } from '@multiformats/multiaddr';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { addressesToServe } from './served-addresses.ts';

const RELAY = '/ip4/198.18.0.10/tcp/4001/p2p/12D3KooWRtRrgaSvtSdVqPezCmT53xNjByHtmiht7VAmJUzA9spi/p2p-circuit';
const served = (addresses: string[], seenFrom: string[]): string[] =>
  addressesToServe(
    addresses.map((a) => multiaddr(a)),
    new Set(seenFrom),
  ).map(String);

test('served addresses: a peer seen from its NAT is served without its LAN and loopback addresses', () => {
  const announced = ['/ip4/198.19.2.10/tcp/4001', '/ip4/198.19.2.10/tcp/4002/ws', '/ip4/127.0.0.1/tcp/4001', '/ip6/::1/tcp/4001', RELAY, `${RELAY}/webrtc`];
  assert.deepEqual(served(announced, ['198.18.0.102']), [RELAY, `${RELAY}/webrtc`]);
  // Not connected at all: nobody vouches for its private addresses either.
  assert.deepEqual(served(announced, []), [RELAY, `${RELAY}/webrtc`]);
});

test('served addresses: a peer connected from its own private address shares this network, and is served at it', () => {
  assert.deepEqual(served(['/ip4/127.0.0.1/tcp/8845', '/ip4/192.168.1.5/tcp/8845'], ['127.0.0.1']), ['/ip4/127.0.0.1/tcp/8845']);
  assert.deepEqual(served(['/ip4/192.168.1.5/tcp/8845', '/ip4/10.0.0.5/tcp/8845'], ['192.168.1.5']), ['/ip4/192.168.1.5/tcp/8845']);
});

test('served addresses: public addresses and names are served whoever sees the peer', () => {
  const announced = ['/ip4/8.8.4.4/tcp/8845', '/ip6/2001:4860:4860::8844/tcp/8845', '/dns4/node.example.org/tcp/443/tls/ws'];
  assert.deepEqual(served(announced, []), announced);
});
