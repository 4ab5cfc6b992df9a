import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { PEER_LIMITS } from './peer-limits.ts';
import { framed, NOT_ED25519_ID, peerInfoBytes, routingMessage } from './routing-message.test-util.ts';
import { judgeRoutingAnswer } from './routing-message.ts';

const FIND_NODE = 4;
const address = multiaddr('/ip4/127.0.0.1/tcp/8845').bytes;
const id = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toMultihash().bytes;
const peer = (addresses = [address]): Uint8Array => peerInfoBytes(id, addresses);
const reasonOf = (bytes: Uint8Array): string => {
  const verdict = judgeRoutingAnswer(bytes);
  return verdict.kind === 'invalid' ? verdict.reason : verdict.kind;
};

test('routing answers: an honest one is valid, k peers of 16 addresses included; a part of one is incomplete', () => {
  assert.equal(reasonOf(framed(routingMessage(FIND_NODE, [peer()]))), 'valid');
  const full = framed(
    routingMessage(
      FIND_NODE,
      Array.from({ length: PEER_LIMITS.routingPeers }, () => peer(Array(PEER_LIMITS.routingAddresses).fill(address))),
    ),
  );
  assert.isBelow(full.length, PEER_LIMITS.routingMessageBytes);
  assert.equal(reasonOf(full), 'valid');
  assert.equal(reasonOf(full.subarray(0, full.length - 1)), 'incomplete');
  assert.equal(reasonOf(new Uint8Array()), 'incomplete');
});

test('routing answers: malformed peer records and oversized answers are invalid, each saying why', () => {
  const cases: [string, Uint8Array, RegExp][] = [
    ['a peer that is not an Ed25519 key', framed(routingMessage(FIND_NODE, [peerInfoBytes(NOT_ED25519_ID, [address])])), /not an Ed25519 key/],
    ['an address that does not parse', framed(routingMessage(FIND_NODE, [peer([Uint8Array.of(0xff, 0xff, 0xff)])])), /not a multiaddr/],
    ['a peer without an id', framed(routingMessage(FIND_NODE, [Uint8Array.from([0x12, address.length, ...address])])), /without an id/],
    [
      'one peer too many',
      framed(
        routingMessage(
          FIND_NODE,
          Array.from({ length: PEER_LIMITS.routingPeers + 1 }, () => peer()),
        ),
      ),
      /more than 20 peers/,
    ],
    ['one address too many', framed(routingMessage(FIND_NODE, [peer(Array(PEER_LIMITS.routingAddresses + 1).fill(address))])), /more than 16 addresses/],
    ['a record', framed(Uint8Array.from([0x08, FIND_NODE, 0x1a, 0x01, 0x00])), /a record/],
    ['a field past the end', framed(Uint8Array.from([0x08, FIND_NODE, 0x42, 0x7f, 0x00])), /past the end/],
    ['an answer over the bound', Uint8Array.from([0x80, 0x80, 0x08]), /a message of 131072 bytes/],
  ];
  for (const [what, bytes, reason] of cases) assert.match(reasonOf(bytes), reason, what);
});
