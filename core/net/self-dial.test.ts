import { multiaddr } from '@multiformats/multiaddr';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { dialsItself } from './self-dial.ts';

const listening = ['/ip4/0.0.0.0/tcp/4001', '/ip4/0.0.0.0/tcp/4002/ws', '/ip6/::/tcp/4001'].map((a) => multiaddr(a));

test('self-dial: a loopback address at a port this node listens on is this node', () => {
  for (const address of [
    '/ip4/127.0.0.1/tcp/4001',
    '/ip6/::1/tcp/4001',
    '/ip4/127.0.0.1/tcp/4002/ws/p2p/12D3KooWRtRrgaSvtSdVqPezCmT53xNjByHtmiht7VAmJUzA9spi',
  ]) {
    assert.isTrue(dialsItself(multiaddr(address), listening), address);
  }
  assert.isTrue(dialsItself(multiaddr('/ip4/127.0.0.1/tcp/9000'), [multiaddr('/ip4/127.0.0.1/tcp/9000')]));
});

test('self-dial: another port on loopback (a devnet), or another host at the same port, is dialled', () => {
  for (const address of [
    '/ip4/127.0.0.1/tcp/4003',
    '/ip4/198.18.0.10/tcp/4001',
    '/ip4/198.18.0.10/tcp/4001/p2p/12D3KooWRtRrgaSvtSdVqPezCmT53xNjByHtmiht7VAmJUzA9spi/p2p-circuit',
  ]) {
    assert.isFalse(dialsItself(multiaddr(address), listening), address);
  }
  // Listening on one address only, the same port elsewhere on loopback is not this node.
  assert.isFalse(dialsItself(multiaddr('/ip4/127.0.0.1/tcp/4001'), [multiaddr('/ip4/198.18.0.10/tcp/4001')]));
});
