/** A node without peers says so once a minute, and /status says it too; in simulated time. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, openChain } from '../chain/testnet.test-util.ts';
import { seededRandom } from '../crypto/random.test-util.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { ALONE_REPORT_MS, DEFAULT_ALONE_ADVICE } from './alone-service.ts';
import { capacity } from './node.test-util.ts';
import { MeshNode } from './node.ts';
import { fullNodeServices } from './services.ts';

/** Node `i` on `bus`, not mining, with the advice its host gives and where it logs. */
async function nodeOn(bus: MemoryBus, clock: ReturnType<typeof testScheduler>, i: number, advice?: string, log?: (line: string) => void) {
  return MeshNode.create({
    chain: await openChain(),
    network: bus.join(key(i).publicKey),
    key: key(i),
    clock,
    random: seededRandom(i),
    ...(log === undefined ? {} : { log }),
    services: fullNodeServices({ mine: false, capacity, ...(advice === undefined ? {} : { alone: { advice } }) }),
  });
}

test('alone: a node without peers logs its advice once a minute, and /status carries it until a peer comes', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const lines: string[] = [];
  const advice = 'To join a mesh, restart with --bootstrap <multiaddr>.';
  const a = await nodeOn(bus, clock, 1, advice, (line) => lines.push(line));
  await a.start();
  const said = (): string[] => lines.filter((l) => l.startsWith('p2p: no'));
  try {
    assert.include(a.services.ledger.status(), { peers: 0, alone: advice });
    await clock.advance(ALONE_REPORT_MS - 1);
    assert.deepEqual(said(), [], 'nothing before a full minute: bootstrap peers and mDNS answer within it');
    await clock.advance(1);
    assert.deepEqual(said(), [`p2p: no peers. ${advice}`]);
    await clock.advance(ALONE_REPORT_MS);
    assert.lengthOf(said(), 2, 'once a minute, not more');

    const b = await nodeOn(bus, clock, 2);
    await b.start();
    try {
      assert.include(a.services.ledger.status(), { peers: 1, alone: null });
      await clock.advance(ALONE_REPORT_MS);
      assert.deepEqual(said().slice(2), ['p2p: no longer alone: 1 peer']);
      await clock.advance(3 * ALONE_REPORT_MS);
      assert.lengthOf(said(), 3, 'a node with peers says nothing more');
    } finally {
      await b.stop();
    }
  } finally {
    await a.stop();
  }
});

test('alone: without advice from its host, /status says the default', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  const a = await nodeOn(bus, clock, 1);
  await a.start();
  try {
    assert.include(a.services.ledger.status(), { peers: 0, alone: DEFAULT_ALONE_ADVICE });
  } finally {
    await a.stop();
  }
});
