import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { ALICE, BOB, sign } from '../ledger/fixtures.test-util.ts';
import type { Tx } from '../ledger/tx.ts';
import { TxFeed, type TxFeedItem } from './tx-feed.ts';

const START = 1_700_000_000_000;

function transfers(n: number): Promise<Tx[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => sign(ALICE, { kind: 'Transfer', to: BOB.publicKey, amount: BigInt(i + 1) }, i + 1)));
}

// What a follower is told, in order: each transaction by its position and amount, a notice as `missed after/first_held`.
function recorder(): { items: string[]; listener: (item: TxFeedItem) => void } {
  const items: string[] = [];
  return { items, listener: (item) => items.push(item.kind === 'tx' ? `${item.seq}:${item.event.amount}` : `missed ${item.after}/${item.first_held}`) };
}

test('TxFeed: positions are max(previous + 1, now in ms); each event is the stream object of its transaction', async () => {
  let now = START;
  const feed = new TxFeed(() => now);
  const [a, b, c] = await transfers(3);
  const seen: TxFeedItem[] = [];
  feed.follow(null, (item) => seen.push(item));
  feed.push(a!, 1n);
  feed.push(b!, 2n);
  now += 50;
  feed.push(c!, 3n);
  assert.deepEqual(
    seen.map((item) => item.kind === 'tx' && item.seq),
    [START, START + 1, START + 50],
  );
  const first = seen[0]!;
  assert.equal(first.kind, 'tx');
  if (first.kind === 'tx') assert.deepEqual(first.event, { id: toHex(a!.id), origin: toHex(ALICE.publicKey), kind: 'Transfer', amount: '1' });
  // The clock going back does not take positions back.
  now = START - 10_000;
  feed.push(a!, 4n);
  assert.equal((seen.at(-1) as { seq: number }).seq, START + 51);
});

test('TxFeed: a follower after a position gets the held events after it, then live ones, with no gap or duplicate at the seam', async () => {
  const feed = new TxFeed(() => START);
  const txs = await transfers(6);
  txs.slice(0, 4).forEach((tx, i) => feed.push(tx, BigInt(i + 1)));
  const { items, listener } = recorder();
  feed.follow(START + 1, listener);
  txs.slice(4).forEach((tx, i) => feed.push(tx, BigInt(i + 5)));
  assert.deepEqual(items, [`${START + 2}:3`, `${START + 3}:4`, `${START + 4}:5`, `${START + 5}:6`]);
  // At the newest position: nothing replayed, nothing missed.
  const live = recorder();
  feed.follow(START + 5, live.listener);
  assert.deepEqual(live.items, []);
  // Without a position: live only.
  const fresh = recorder();
  const unsubscribe = feed.follow(null, fresh.listener);
  feed.push(txs[0]!, 7n);
  unsubscribe();
  feed.push(txs[1]!, 8n);
  assert.deepEqual(fresh.items, [`${START + 6}:7`]);
  assert.deepEqual(live.items, [`${START + 6}:7`, `${START + 7}:8`]);
});

test('TxFeed: keeps the last `keep` events; a follower behind them, or with an id from before the node started, is told first', async () => {
  const feed = new TxFeed(() => START, 3);
  const txs = await transfers(5);
  const early = recorder();
  feed.follow(START - 1, early.listener);
  assert.deepEqual(early.items, [`missed ${START - 1}/null`], 'an id from before this node started: the node cannot vouch for what followed it');
  txs.forEach((tx, i) => feed.push(tx, BigInt(i + 1)));
  assert.equal(feed.size, 3);
  const behind = recorder();
  feed.follow(START, behind.listener);
  assert.deepEqual(behind.items, [`missed ${START}/${START + 2}`, `${START + 2}:3`, `${START + 3}:4`, `${START + 4}:5`], 'event START + 1 was dropped');
  const atEdge = recorder();
  feed.follow(START + 1, atEdge.listener);
  assert.deepEqual(atEdge.items, [`${START + 2}:3`, `${START + 3}:4`, `${START + 4}:5`], 'the last event dropped was seen: nothing missed');
  const future = recorder();
  feed.follow(START + 99, future.listener);
  assert.deepEqual(
    future.items,
    [`missed ${START + 99}/${START + 2}`, `${START + 2}:3`, `${START + 3}:4`, `${START + 4}:5`],
    'an id this node never issued: everything held',
  );
  assert.throws(() => new TxFeed(() => START, 0), RangeError);
});
