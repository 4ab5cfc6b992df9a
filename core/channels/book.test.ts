// The channel book: what is written, in what order, and what a reopened store holds.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { type BatchOp, MemoryStore } from '../store/kv.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { ChannelBook, type ChannelRecord, newChannelRecord } from './book.ts';

// The book needs no clock; the scheduler only tells when the writes started have gone as far as they can.
const scheduler = testScheduler();

/** A memory store that records its batches and holds each until the test lets it go. */
class HeldStore extends MemoryStore {
  readonly batches: (readonly BatchOp[])[] = [];
  #release: (() => void)[] = [];

  override async batch(ops: readonly BatchOp[]): Promise<void> {
    this.batches.push(ops);
    await new Promise<void>((resolve) => this.#release.push(resolve));
    return super.batch(ops);
  }

  /** Lets every batch written so far finish. */
  async release(): Promise<void> {
    while (this.#release.length > 0) {
      for (const go of this.#release.splice(0)) go();
      await scheduler.settle();
    }
  }
}

function record(n: number): ChannelRecord {
  return newChannelRecord({
    channelId: n.toString(16).padStart(2, '0').repeat(32),
    role: 'host',
    payer: 'aa'.repeat(32),
    host: 'bb'.repeat(32),
    capacity: '100',
    expiryHeight: 50,
    status: 'open',
    createdMs: n,
  });
}

test('channel book: changes made while a batch is written go into one next batch, each record at its latest state', async () => {
  const store = new HeldStore();
  const book = await ChannelBook.open(store);
  const a = record(1);
  const b = record(2);
  const first = book.save(a);
  await scheduler.settle();
  a.cumulative = '10';
  const second = book.save(a);
  a.cumulative = '20';
  const third = book.save(a);
  const other = book.save(b);
  await scheduler.settle();
  assert.lengthOf(store.batches, 1, 'the first change is being written, the rest wait');
  await store.release();
  await Promise.all([first, second, third, other]);
  assert.lengthOf(store.batches, 2, 'one batch for everything that waited');
  assert.lengthOf(store.batches[1]!, 2, 'a record once, at its latest state');
  const written = JSON.parse(new TextDecoder().decode((store.batches[1]![0] as { value: Uint8Array }).value)) as ChannelRecord;
  assert.equal(written.cumulative, '20');
  assert.equal((await ChannelBook.open(store)).get(a.channelId)!.cumulative, '20');
});

test('channel book: a reopened store holds each record as last saved, and forgets deleted ones', async () => {
  const store = new MemoryStore();
  const book = await ChannelBook.open(store);
  const a = record(1);
  const b = record(2);
  await book.save(a);
  a.cumulative = '7';
  a.payerSig = 'cd'.repeat(64);
  void book.save(a);
  void book.save(b);
  await book.delete(b.channelId);
  const again = await ChannelBook.open(store);
  assert.deepEqual(again.all(), [a]);
  assert.equal(again.get(a.channelId)!.cumulative, '7');
});
