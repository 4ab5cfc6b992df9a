// Bringing a channel record in line with the chain, as after a restart: the blocks are made here,
// the records written by hand as a crash could have left them.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { Mempool } from '../chain/mempool.ts';
import { key, mine, openChain, tx } from '../chain/testnet.test-util.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { burnOf } from '../ledger/params.ts';
import { channelReceiptBytes } from '../ledger/tx.ts';
import { type ChannelRecord, newChannelRecord } from './book.ts';
import { reconcile } from './chain-facts.ts';

const P = key(1);
const H = key(2);

function recordOf(id: Uint8Array, role: 'payer' | 'host', status: ChannelRecord['status'], extra: Partial<ChannelRecord> = {}): ChannelRecord {
  return Object.assign(
    newChannelRecord({
      channelId: toHex(id),
      role,
      payer: toHex(P.publicKey),
      host: toHex(H.publicKey),
      capacity: String(10n * CREDIT),
      expiryHeight: 100,
      status,
      createdMs: 0,
    }),
    extra,
  );
}

test('channel facts: a record left open or closing by a crash is brought in line with the chain: open, closed with its settlement, or expired', async () => {
  const chain = await openChain();
  const pool = new Mempool(chain);
  await mine(chain, P, 2);
  const open = await tx(P, { kind: 'ChannelOpen', nonce: 1, host: H.publicKey, capacity: 10n * CREDIT, expiry_height: 100 });
  const other = await tx(P, { kind: 'ChannelOpen', nonce: 2, host: H.publicKey, capacity: CREDIT, expiry_height: 8 });
  await mine(chain, P, 1, [open, other]);
  // Still open on the chain, though the record says closing (its ChannelClose was lost with the pool).
  const stillOpen = recordOf(open.id, 'host', 'closing', { endTx: 'ab'.repeat(32) });
  assert.isTrue(await reconcile(stillOpen, chain, pool));
  assert.deepInclude(stillOpen, { status: 'open', openHeight: 3 });

  const sig = await P.sign(channelReceiptBytes(chain.params.network, open.id, H.publicKey, 4n * CREDIT));
  const close = await tx(H, { kind: 'ChannelClose', nonce: 1, channel_id: open.id, payer: P.publicKey, cumulative: 4n * CREDIT, payer_sig: sig });
  await mine(chain, P, 1, [close]);
  await mine(chain, P, 5);
  const expire = await tx(P, { kind: 'ChannelExpire', nonce: 3, channel_id: other.id });
  await mine(chain, P, 1, [expire]);

  const closed = recordOf(open.id, 'payer', 'open');
  assert.isTrue(await reconcile(closed, chain, pool));
  assert.deepInclude(closed, { status: 'closed', endTx: toHex(close.id), settled: { cumulative: String(4n * CREDIT), burned: String(burnOf(4n * CREDIT)) } });
  const expired = recordOf(other.id, 'host', 'open');
  assert.isTrue(await reconcile(expired, chain, pool));
  assert.deepInclude(expired, { status: 'expired', endTx: toHex(expire.id), openHeight: 3 });
});

test('channel facts: a ChannelOpen never mined stays opening while its nonce is free, and is forgotten once the nonce went elsewhere', async () => {
  const chain = await openChain();
  const pool = new Mempool(chain);
  await mine(chain, P, 2);
  const lost = await tx(P, { kind: 'ChannelOpen', nonce: 1, host: H.publicKey, capacity: CREDIT, expiry_height: 100 });
  const waiting = recordOf(lost.id, 'payer', 'opening', { openTx: toHex(lost.bytes), openNonce: 1 });
  assert.isTrue(await reconcile(waiting, chain, pool), 'it may still be mined');
  assert.equal(waiting.status, 'opening');
  const transfer = await tx(P, { kind: 'Transfer', nonce: 1, to: H.publicKey, amount: CREDIT });
  await mine(chain, P, 1, [transfer]);
  assert.isFalse(await reconcile(waiting, chain, pool), 'its nonce went to the transfer');
});
