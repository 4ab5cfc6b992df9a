/**
 * --upnp where no gateway answers (this machine, CI): the node starts, listens and stops as without
 * it. Mapping itself needs a UPnP gateway, which no test here has (docs/network.md).
 */
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { test } from '../test/harness.ts';
import { startP2PNetwork } from './p2p.ts';

test('--upnp without a gateway: the node starts with its listeners and the port-mapping service, and stops', async () => {
  const net = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [], upnp: true });
  try {
    assert.property(net.libp2p.services, 'upnp');
    assert.isNotEmpty(net.addresses());
  } finally {
    await net.stop();
  }
});
