import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { ALICE, BOB, CAROL, NETWORK } from '../ledger/fixtures.test-util.ts';
import { ATLAS_EXPIRY_MS, Atlas, CAPACITY_INTERVAL_MS, capacityCapabilities } from './atlas.ts';
import { signalObject, signSignal } from './signal.ts';
import type { SignalObject } from './types.ts';

const T0 = 1_767_225_600_000; // 2026-01-01, in ms
const MACHINE = { cpuCores: 16, memMb: 65_536, runningJobs: 2, tags: ['linux', 'x86_64', 'docker', 'manycore', 'highmem'] };

function capacitySignal(from: string, nonce: number, capabilities: SignalObject['capabilities']): SignalObject {
  return { from, to: 'broadcast', capabilities, payload_hex: '', nonce, id: '00'.repeat(32) };
}

const alice = toHex(ALICE.publicKey);
const bob = toHex(BOB.publicKey);
const carol = toHex(CAROL.publicKey);

test('atlas: capacity becomes cpu, mem_mb and jobs, and tags only while mining', () => {
  assert.equal(CAPACITY_INTERVAL_MS, 60_000);
  assert.deepEqual(capacityCapabilities(MACHINE, false), [
    { name: 'cpu', version: 16 },
    { name: 'mem_mb', version: 65_536 },
    { name: 'jobs', version: 2 },
  ]);
  assert.deepEqual(capacityCapabilities({ ...MACHINE, tags: ['linux', 'gpu', 'linux'] }, true), [
    { name: 'cpu', version: 16 },
    { name: 'mem_mb', version: 65_536 },
    { name: 'jobs', version: 2 },
    { name: 'tag:linux', version: 1 },
    { name: 'tag:gpu', version: 1 },
  ]);
});

test('atlas: a signed capacity signal becomes an entry with its tags stripped of the prefix', async () => {
  const atlas = new Atlas();
  const signed = await signSignal(
    { to: 'broadcast', capabilities: capacityCapabilities(MACHINE, true), payload: new Uint8Array(0), burn_proof: null, nonce: 1 },
    ALICE,
    NETWORK,
  );
  assert.isTrue(atlas.observe(signalObject(signed), T0 + 1_999));
  assert.deepEqual(atlas.entries(T0 + 2_000), [
    {
      node_id: alice,
      cpu_cores: 16,
      mem_mb: 65_536,
      running_jobs: 2,
      last_seen_secs: Math.floor((T0 + 1_999) / 1000),
      tags: ['linux', 'x86_64', 'docker', 'manycore', 'highmem'],
    },
  ]);
});

test('atlas: a signal without all of cpu, mem_mb and jobs is not a capacity signal', () => {
  const atlas = new Atlas();
  const partial = [
    [
      { name: 'cpu', version: 4 },
      { name: 'mem_mb', version: 1024 },
    ],
    [
      { name: 'cpu', version: 4 },
      { name: 'jobs', version: 0 },
      { name: 'tag:linux', version: 1 },
    ],
    [{ name: 'chat', version: 1 }],
    [],
  ];
  for (const caps of partial) assert.isFalse(atlas.observe(capacitySignal(alice, 1, caps), T0));
  assert.deepEqual(atlas.entries(T0), []);
  // Extra capabilities are fine; `tag:` alone is no tag.
  const caps = [
    { name: 'jobs', version: 0 },
    { name: 'chat', version: 3 },
    { name: 'tag:', version: 1 },
    { name: 'mem_mb', version: 512 },
    { name: 'tag:gpu', version: 1 },
    { name: 'cpu', version: 1 },
  ];
  assert.isTrue(atlas.observe(capacitySignal(alice, 1, caps), T0));
  assert.deepEqual(atlas.entries(T0)[0]!.tags, ['gpu']);
});

test('atlas: a newer signal replaces the entry, an older one is ignored', () => {
  const atlas = new Atlas();
  const caps = (jobs: number): SignalObject['capabilities'] => capacityCapabilities({ ...MACHINE, runningJobs: jobs }, true);
  atlas.observe(capacitySignal(alice, 10, caps(1)), T0);
  assert.isTrue(atlas.observe(capacitySignal(alice, 11, capacityCapabilities({ ...MACHINE, runningJobs: 3 }, false)), T0 + 60_000));
  assert.isFalse(atlas.observe(capacitySignal(alice, 11, caps(7)), T0 + 61_000));
  assert.isFalse(atlas.observe(capacitySignal(alice, 5, caps(7)), T0 + 62_000));
  const [entry] = atlas.entries(T0 + 62_000);
  assert.equal(entry!.running_jobs, 3);
  assert.deepEqual(entry!.tags, [], 'a node that stopped mining advertises no tags');
  assert.equal(entry!.last_seen_secs, (T0 + 60_000) / 1000);
});

test('atlas: entries are sorted by node id and dropped after five silent intervals', () => {
  const atlas = new Atlas();
  const caps = capacityCapabilities(MACHINE, false);
  atlas.observe(capacitySignal(carol, 1, caps), T0);
  atlas.observe(capacitySignal(alice, 1, caps), T0 + 1_000);
  atlas.observe(capacitySignal(bob, 1, caps), T0 + 2_000);
  const ids = [alice, bob, carol].sort();
  assert.deepEqual(
    atlas.entries(T0 + 2_000).map((e) => e.node_id),
    ids,
  );
  assert.equal(ATLAS_EXPIRY_MS, 5 * 60_000);
  assert.deepEqual(
    atlas.entries(T0 + ATLAS_EXPIRY_MS).map((e) => e.node_id),
    ids,
    'exactly five intervals old is kept',
  );
  assert.deepEqual(
    atlas.entries(T0 + ATLAS_EXPIRY_MS + 1).map((e) => e.node_id),
    [alice, bob].sort(),
  );
  assert.equal(atlas.size, 2, 'an expired entry is gone, not hidden');
  // Heard again, it comes back.
  atlas.observe(capacitySignal(carol, 2, caps), T0 + ATLAS_EXPIRY_MS + 5);
  assert.equal(atlas.entries(T0 + ATLAS_EXPIRY_MS + 5).length, 3);
});

test('atlas: the map is bounded, dropping the node heard from least recently', () => {
  const atlas = new Atlas({ maxNodes: 2 });
  const caps = capacityCapabilities(MACHINE, false);
  atlas.observe(capacitySignal(alice, 1, caps), T0);
  atlas.observe(capacitySignal(bob, 1, caps), T0 + 1);
  atlas.observe(capacitySignal(alice, 2, caps), T0 + 2);
  atlas.observe(capacitySignal(carol, 1, caps), T0 + 3);
  assert.deepEqual(
    atlas.entries(T0 + 3).map((e) => e.node_id),
    [alice, carol].sort(),
  );
  // Entries handed out are copies.
  atlas.entries(T0 + 3)[0]!.tags.push('forged');
  assert.deepEqual(atlas.entries(T0 + 3)[0]!.tags, []);
});
