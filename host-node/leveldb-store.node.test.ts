import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { kvCompliance } from '../test/kv-compliance.ts';
import { LevelStore, StoreLockedError } from './leveldb-store.ts';

const root = await mkdtemp(join(tmpdir(), 'mesh-level-'));
after(() => rm(root, { recursive: true, force: true }));

let counter = 0;
const freshPath = (): string => join(root, `db-${counter++}`);
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const b = (...xs: number[]): Uint8Array => Uint8Array.from(xs);

kvCompliance('LevelStore', () => LevelStore.open(freshPath()));

test('LevelStore: values come back as plain Uint8Array, not Buffer', async () => {
  const store = await LevelStore.open(freshPath());
  await store.batch([{ type: 'put', key: b(1), value: b(2) }]);
  const got = await store.get(b(1));
  assert.equal(Object.getPrototypeOf(got), Uint8Array.prototype);
  for await (const [k, v] of store.entries()) {
    assert.equal(Object.getPrototypeOf(k), Uint8Array.prototype);
    assert.equal(Object.getPrototypeOf(v), Uint8Array.prototype);
  }
  await store.close();
});

test('LevelStore: reopening keeps the data; close is idempotent', async () => {
  const path = join(freshPath(), 'nested', 'chain');
  const store = await LevelStore.open(path);
  await store.batch([
    { type: 'put', key: b(1), value: b(1) },
    { type: 'put', key: b(2), value: b(2) },
  ]);
  await store.batch([{ type: 'del', key: b(1) }]);
  await store.close();
  await store.close();
  await assert.rejects(store.get(b(2)), /closed/);

  const again = await LevelStore.open(path, { sync: false });
  assert.equal(await again.get(b(1)), undefined);
  assert.deepEqual([...(await again.get(b(2)))!], [2]);
  await again.close();
});

test('LevelStore: a second open of the same path fails with a clear error naming it', async () => {
  const path = freshPath();
  const store = await LevelStore.open(path);
  await assert.rejects(LevelStore.open(path), (error: unknown) => {
    assert.ok(error instanceof StoreLockedError);
    assert.equal(error.message.startsWith(`another mesh node is using ${path}`), true, error.message);
    return true;
  });
  await store.close();
  // Released on close: the next open works.
  await (await LevelStore.open(path)).close();
});

const writer = fileURLToPath(new URL('../test/fixtures/kv-writer.ts', import.meta.url));
const KEYS_PER_BATCH = 20;

/** Runs the writer child until it has acknowledged `acks` batches, checks the lock, then SIGKILLs it. */
async function writeThenKill(path: string, acks: number): Promise<number> {
  const child = spawn(process.execPath, [writer, path, String(KEYS_PER_BATCH)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split('\n').length > acks) resolve();
    });
    child.on('exit', () => reject(new Error(`writer exited early: ${err}`)));
  });
  // While the child writes, this process cannot open the store, and says why.
  await assert.rejects(LevelStore.open(path), StoreLockedError);
  child.kill('SIGKILL');
  await closed;
  assert.equal(child.signalCode, 'SIGKILL');
  const lines = out.split('\n').filter((line) => line !== '');
  return Number(lines[lines.length - 1]);
}

test('LevelStore: after SIGKILL mid-write, every acknowledged batch is there and each batch is whole', async () => {
  for (const acks of [5, 40]) {
    const path = freshPath();
    const lastAcked = await writeThenKill(path, acks);
    assert.ok(lastAcked >= acks - 1, `acked ${lastAcked}`);

    const store = await LevelStore.open(path);
    const perBatch = new Map<number, number>();
    for await (const [key] of store.entries({ gte: encoder.encode('b:'), lt: encoder.encode('b;') })) {
      const n = Number(decoder.decode(key).split(':')[1]);
      perBatch.set(n, (perBatch.get(n) ?? 0) + 1);
    }
    const last = Number(decoder.decode((await store.get(encoder.encode('last')))!));
    await store.close();

    // Batches are awaited one at a time, so at most the one in flight at the kill may be extra.
    assert.ok(last === lastAcked || last === lastAcked + 1, `last ${last}, acknowledged ${lastAcked}`);
    assert.deepEqual(
      [...perBatch.keys()].sort((x, y) => x - y),
      Array.from({ length: last + 1 }, (_, i) => i),
    );
    for (const [n, count] of perBatch) assert.equal(count, KEYS_PER_BATCH, `batch ${n} is partial`);
  }
});
