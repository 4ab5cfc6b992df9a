// The gossip topics and protocol markers as the contract names them (node-api.md §6 and §9):
// nodes that disagree on one of these strings do not hear each other at all.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { appTopic, rpcProtocolId, TOPICS } from './network.ts';

test("topics: the gossip topic names of the contract, the netgraph's and the evidence topic", () => {
  assert.deepEqual(
    { ...TOPICS },
    {
      transactions: 'mesh-transactions',
      blocks: 'mesh-blocks',
      heights: 'mesh-heights',
      signals: 'mesh-protocol-1',
      netgraph: 'mesh-netgraph',
      evidence: 'mesh-evidence',
    },
  );
});

test('topics: app topics live under mesh-app/; RPC protocols are mesh RPC protocol 1', () => {
  assert.equal(appTopic('chat'), 'mesh-app/chat');
  assert.equal(rpcProtocolId('echo'), '/mesh/rpc/1/echo');
});
