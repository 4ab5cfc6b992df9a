import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import type { BlockEvent } from '../ledger/block.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import type { Flow } from '../web/sse.ts';
import { followBlocks, REPLAY_PAGE } from './block-feed.ts';
import type { Chain } from './chain.ts';
import { key, mine, openChain } from './testnet.test-util.ts';

const A = key(1);
const B = key(2);

// The follower needs no clock; the scheduler only tells when its work has finished.
const scheduler = testScheduler();
/** Lets the follower's store reads and page sends run. */
const settle = (): Promise<void> => scheduler.settle();

/** A client queue of `capacity` events that the test reads from by hand. */
class TestQueue implements Flow {
  unread = 0;
  readonly #capacity: number;
  #waiting: (() => void)[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  room(): number {
    return this.#capacity - this.unread;
  }

  drained(): Promise<void> {
    if (this.room() >= this.#capacity / 2) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** The client reads everything queued. */
  readAll(): void {
    this.unread = 0;
    const woken = this.#waiting;
    this.#waiting = [];
    for (const resolve of woken) resolve();
  }
}

const heights = (events: readonly BlockEvent[]): number[] => events.map((e) => e.index);
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Each event follows the one before it on one branch, unless it re-sends a height (a reorganisation). */
function assertLinked(events: readonly BlockEvent[], sent: Map<number, BlockEvent> = new Map()): void {
  for (const event of events) {
    const parent = sent.get(event.index - 1);
    if (parent !== undefined) assert.equal(event.prev_hash, parent.hash, `block ${event.index} follows the block sent at ${event.index - 1}`);
    sent.set(event.index, event);
    // A re-sent height replaces what was sent above it.
    for (const h of [...sent.keys()]) if (h > event.index) sent.delete(h);
  }
}

test('block feed: replays the held blocks from a height in pages the client has room for, then goes on live, without a gap or a duplicate', async () => {
  const chain = await openChain();
  await mine(chain, A, 2 * REPLAY_PAGE + 30);
  const queue = new TestQueue(60);
  const got: BlockEvent[] = [];
  const stop = followBlocks(
    chain,
    3,
    (event) => {
      got.push(event);
      queue.unread++;
    },
    { flow: queue },
  );
  try {
    await settle();
    assert.deepEqual(heights(got), range(3, 62), 'as many as fit, and then it waits for the client');
    // Blocks the chain connects while the feed waits are read from the store when it gets there.
    await mine(chain, A, 3);
    await settle();
    assert.equal(got.length, 60);
    while (got.length < chain.tip.height - 2) {
      queue.readAll();
      await settle();
    }
    queue.readAll();
    await mine(chain, A, 2);
    await settle();
    assert.deepEqual(heights(got), range(3, chain.tip.height));
    assertLinked(got);
    assert.equal(got.at(-1)!.hash, toHex(chain.tip.hash));
  } finally {
    stop();
  }
});

test('block feed: without a height it starts with the next block; past the tip it waits for that height; below a light base it starts at the base', async () => {
  const chain = await openChain();
  await mine(chain, A, 4);
  const live: BlockEvent[] = [];
  const ahead: BlockEvent[] = [];
  const stops = [followBlocks(chain, null, (e) => live.push(e)), followBlocks(chain, 7, (e) => ahead.push(e))];
  try {
    await settle();
    await mine(chain, A, 4);
    await settle();
    assert.deepEqual(heights(live), [5, 6, 7, 8]);
    assert.deepEqual(heights(ahead), [7, 8]);
  } finally {
    stops.forEach((stop) => stop());
  }
  // Nothing after unsubscribing.
  await mine(chain, A, 1);
  await settle();
  assert.deepEqual(heights(live), [5, 6, 7, 8]);

  const light = await openChain({ mode: 'light', retainBlocks: 5 });
  await mine(light, A, 12);
  const got: BlockEvent[] = [];
  const stop = followBlocks(light, 0, (e) => got.push(e));
  try {
    await settle();
    assert.deepEqual(heights(got), range(light.base, 12));
  } finally {
    stop();
  }
});

/** Two chains that share 5 blocks: `a` then adds 3 of A's, `heavier` 6 of B's. */
async function fork(): Promise<{ a: Chain; heavier: Chain }> {
  const a = await openChain();
  const heavier = await openChain();
  await heavier.addBranch(await mine(a, A, 5));
  await mine(a, A, 3);
  await mine(heavier, B, 6);
  return { a, heavier };
}

test('block feed: a reorganisation re-sends the heights from the fork on, along the new branch', async () => {
  const { a, heavier } = await fork();
  const got: BlockEvent[] = [];
  const stop = followBlocks(a, 1, (e) => got.push(e));
  try {
    await settle();
    assert.deepEqual(heights(got), range(1, 8));
    assert.equal(await a.addBranch(await heavier.blocksFrom(6, 6)), 'reorganized');
    await settle();
    assert.deepEqual(heights(got), [...range(1, 8), ...range(6, 11)]);
    assertLinked(got);
    assert.equal(got.at(-1)!.hash, toHex(heavier.tip.hash));
  } finally {
    stop();
  }
});

test('block feed: a reorganisation while the client is behind takes the feed back to the fork, and on along the new branch', async () => {
  const { a, heavier } = await fork();
  const queue = new TestQueue(14);
  const got: BlockEvent[] = [];
  const stop = followBlocks(
    a,
    1,
    (e) => {
      got.push(e);
      queue.unread++;
    },
    { flow: queue },
  );
  try {
    await settle();
    assert.deepEqual(heights(got), range(1, 8), 'all of it fit');
    queue.unread = 14;
    await a.addBranch(await heavier.blocksFrom(6, 6));
    await settle();
    assert.equal(got.length, 8, 'no room: nothing sent');
    queue.readAll();
    await settle();
    assert.deepEqual(heights(got), [...range(1, 8), ...range(6, 11)]);
    assertLinked(got);
  } finally {
    stop();
  }
});
