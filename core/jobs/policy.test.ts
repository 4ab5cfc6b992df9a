import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { CREDIT } from '../encoding/amount.ts';
import { isImageReference, normalizeImage } from './image.ts';
import { LogBuffer } from './log-buffer.ts';
import { entryWithin, imageAllowed, refusalsOf } from './policy.ts';
import { bidMismatch, decodeSpec, encodeSpec, MIN_BILLED_MS, settleCost, specHash, specOf, specProblem } from './spec.ts';
import type { JobRequest } from './types.ts';

const REQUEST: JobRequest = {
  image: 'localhost/busybox:test',
  cmd: null,
  env: [['A', 'b']],
  cpuCores: 2,
  memMb: 64,
  durationSecs: 60,
  gpus: 0,
  bid: 5n,
  billing: 'settle',
};

test('image: references are read as engines read them', () => {
  assert.equal(normalizeImage('busybox'), 'docker.io/library/busybox');
  assert.equal(normalizeImage('busybox:1.36'), 'docker.io/library/busybox:1.36');
  assert.equal(normalizeImage('me/tool'), 'docker.io/me/tool');
  assert.equal(normalizeImage('localhost/busybox:test'), 'localhost/busybox:test');
  assert.equal(normalizeImage(`ghcr.io/me/tool@sha256:${'a'.repeat(64)}`), `ghcr.io/me/tool@sha256:${'a'.repeat(64)}`);
  assert.equal(normalizeImage('registry:5000/tool'), 'registry:5000/tool');
});

test("image: a reference is Docker's grammar within the spec's 255 bytes", () => {
  const digest = `@sha256:${'3f'.repeat(32)}`;
  for (const good of ['busybox', 'localhost/busybox:test', 'localhost:5000/a/b/c', `ghcr.io/me/tool:v1${digest}`, `localhost/${'b'.repeat(245)}`]) {
    assert.isTrue(isImageReference(good), good);
  }
  for (const bad of [
    '',
    'Busybox',
    'busybox:',
    'a//b',
    'localhost/busybox:x/evil',
    'busybox@sha256:abc',
    'bad image',
    'a\0b',
    '\ud800',
    `localhost/${'b'.repeat(246)}`,
  ]) {
    assert.isFalse(isImageReference(bad), bad);
  }
});

test('policy: a repository entry allows that image with any tag or digest, nothing longer or nested', () => {
  const digest = `@sha256:${'a'.repeat(64)}`;
  assert.isTrue(imageAllowed('localhost/busybox:test', ['localhost/busybox']));
  assert.isTrue(imageAllowed('localhost/busybox', ['localhost/busybox']));
  assert.isTrue(imageAllowed(`localhost/busybox${digest}`, ['localhost/busybox']));
  assert.isTrue(imageAllowed(`localhost/busybox:test${digest}`, ['localhost/busybox']));
  assert.isFalse(imageAllowed('localhost/busybox-evil:test', ['localhost/busybox']));
  assert.isFalse(imageAllowed('localhost/busybox/evil:latest', ['localhost/busybox']));
  assert.isFalse(imageAllowed('localhost/busybox/evil', ['localhost/busybox']));
  assert.isFalse(imageAllowed('localhost/busybox.evil', ['localhost/busybox']));
  // Full names: a bare name is the official image, and nothing under it.
  assert.isTrue(imageAllowed('busybox', ['busybox']));
  assert.isTrue(imageAllowed('docker.io/library/busybox:1.36', ['busybox']));
  assert.isFalse(imageAllowed('busybox/evil', ['busybox']));
  assert.isFalse(imageAllowed('docker.io/library/busybox/evil', ['busybox']));
  // An entry with a tag pins it.
  assert.isTrue(imageAllowed('localhost/busybox:1.36', ['localhost/busybox:1.36']));
  assert.isTrue(imageAllowed(`localhost/busybox:1.36${digest}`, ['localhost/busybox:1.36']));
  assert.isFalse(imageAllowed('localhost/busybox:1.36.1', ['localhost/busybox:1.36']));
  assert.isFalse(imageAllowed('localhost/busybox:1', ['localhost/busybox:1.36']));
});

test('policy: an entry ending in / allows everything under that path, at any depth', () => {
  assert.isTrue(imageAllowed('python:3', ['docker.io/library/']));
  assert.isTrue(imageAllowed('localhost/busybox/tools/x:1', ['localhost/busybox/']));
  assert.isFalse(imageAllowed('localhost/busybox', ['localhost/busybox/']));
  assert.isFalse(imageAllowed('localhost/busybox-evil/x', ['localhost/busybox/']));
  assert.isTrue(imageAllowed('me/tool/sub:3', ['me/']));
  assert.isFalse(imageAllowed('me/python:3', ['docker.io/library/']));
  assert.isFalse(imageAllowed('meme/tool', ['me/']));
  assert.isTrue(imageAllowed('anything/at:all', ['*']));
  assert.isFalse(imageAllowed('localhost/busybox', []));
  assert.isTrue(imageAllowed('localhost/busybox/evil', ['localhost/busybox', 'localhost/busybox/']), 'any one entry allows');
});

test('policy: what is not an image reference is never allowed, not even by * (a spec from the network)', () => {
  for (const image of ['localhost/busybox:x/evil', 'localhost/busybox:../../evil', 'Localhost/Busybox', 'localhost/busybox\0', '']) {
    assert.isFalse(imageAllowed(image, ['localhost/busybox', 'localhost/', '*']), image);
  }
  const spec = specOf({ ...REQUEST, image: 'localhost/busybox:x/evil' });
  assert.deepEqual(refusalsOf(spec, { allowImages: ['*'], cpuCores: 4, memMb: 2048 }, { cpuCores: 0, memMb: 0 }, { ready: true, gpus: 0 }), [
    'image "localhost/busybox:x/evil" is not a container image reference: [registry[:port]/]name[:tag][@sha256:<64 hex>], the name in lowercase',
  ]);
});

test('policy: every reason a spec does not fit is given, not only the first', () => {
  const spec = specOf({ ...REQUEST, image: 'python:3', cpuCores: 4, memMb: 4096, gpus: 1 });
  assert.deepEqual(refusalsOf(spec, { allowImages: ['localhost/'], cpuCores: 4, memMb: 2048 }, { cpuCores: 2, memMb: 0 }, { ready: false, gpus: 0 }), [
    'no container runtime',
    'image not allowed: python:3',
    'needs 4 cores, 2 free',
    'needs 4096 MiB, 2048 MiB free',
    'needs 1 GPUs, 0 here',
  ]);
  assert.deepEqual(refusalsOf(specOf(REQUEST), { allowImages: [], cpuCores: 4, memMb: 2048 }, { cpuCores: 0, memMb: 0 }, { ready: true, gpus: 0 }), [
    'this node runs no jobs (no image allowed)',
  ]);
  assert.deepEqual(
    refusalsOf(specOf(REQUEST), { allowImages: ['localhost/busybox'], cpuCores: 4, memMb: 2048 }, { cpuCores: 2, memMb: 1984 }, { ready: true, gpus: 0 }),
    [],
  );
});

test('spec: one encoding and hash per spec, per network; a bid for other limits does not match', () => {
  const spec = specOf(REQUEST);
  const bytes = encodeSpec(spec);
  assert.deepEqual(decodeSpec(bytes), spec);
  assert.deepEqual(specHash('mesh-devnet', bytes), specHash('mesh-devnet', encodeSpec(specOf({ ...REQUEST }))));
  assert.notDeepEqual(specHash('mesh-devnet', bytes), specHash('mesh', bytes));
  assert.notDeepEqual(specHash('mesh', bytes), specHash('mesh', encodeSpec(specOf({ ...REQUEST, cmd: ['true'] }))));
  const bid = {
    kind: 'JobBid',
    sender: new Uint8Array(32),
    nonce: 1,
    spec_hash: new Uint8Array(32),
    bid: 5n,
    duration_secs: 60,
    cpu_cores: 2,
    mem_mb: 64,
    billing: 0,
    host: null,
  } as const;
  assert.isNull(bidMismatch(spec, bid));
  assert.match(bidMismatch(spec, { ...bid, mem_mb: 128 })!, /64 MiB, the bid for 128/);
  assert.match(bidMismatch(spec, { ...bid, billing: 1 })!, /billed differently/);
});

test('log buffer: lines numbered from 1, read after a position, followed until the end', () => {
  const buffer = new LogBuffer();
  buffer.push('stdout', 'one', 1);
  buffer.push('stderr', 'two', 2);
  assert.deepEqual(
    buffer.after(1).map((l) => [l.seq, l.stream, l.text]),
    [[2, 'stderr', 'two']],
  );
  const seen: number[] = [];
  let ended = false;
  buffer.follow(
    0,
    (l) => seen.push(l.seq),
    () => (ended = true),
  );
  buffer.push('stdout', 'three', 3);
  buffer.end();
  buffer.push('stdout', 'late', 4);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.isTrue(ended);
  assert.deepEqual(
    buffer.tail(1).map((l) => l.text),
    ['three'],
  );
});

test('spec: a spec from a peer with a NUL or an environment name that is not a name is not run', () => {
  assert.isNull(specProblem(specOf(REQUEST)));
  assert.match(specProblem(specOf({ ...REQUEST, cmd: ['a\0b'] }))!, /NUL/);
  assert.match(specProblem(specOf({ ...REQUEST, env: [['1X', 'v']] }))!, /not a name/);
});

test('policy: an entry is within another when every image it allows, the other allows too', () => {
  const within: [string, string][] = [
    ['localhost/busybox', 'localhost/busybox'],
    ['localhost/busybox:test', 'localhost/busybox'],
    ['localhost/busybox', 'localhost/'],
    ['localhost/tools/', 'localhost/'],
    ['busybox', 'docker.io/library/'],
    ['docker.io/library/busybox:1', 'busybox'],
    ['*', '*'],
    ['localhost/busybox', '*'],
  ];
  for (const [entry, parent] of within) assert.isTrue(entryWithin(entry, parent), `${entry} within ${parent}`);
  const outside: [string, string][] = [
    ['localhost/busybox-x', 'localhost/busybox'],
    ['localhost/busybox/x', 'localhost/busybox'],
    ['localhost/', 'localhost/busybox'],
    ['*', 'localhost/'],
    ['docker.io/', 'docker.io/library/'],
    ['localhost/busybox', 'localhost/busybox:test'],
    ['ghcr.io/a/b', 'localhost/'],
  ];
  for (const [entry, parent] of outside) assert.isFalse(entryWithin(entry, parent), `${entry} not within ${parent}`);
});

test('spec: settle billing pays the bid in proportion to the time run, at least one second of it, at most all of it', () => {
  const bid = 60n * CREDIT;
  assert.equal(settleCost(bid, 60, 0), CREDIT, 'a job that ended at once pays one second');
  assert.equal(settleCost(bid, 60, 400), CREDIT, 'and so does one that ran 0.4 s');
  assert.equal(settleCost(bid, 60, MIN_BILLED_MS), CREDIT);
  assert.equal(settleCost(bid, 60, 30_500), (bid * 30_500n) / 60_000n);
  assert.equal(settleCost(bid, 60, 120_000), bid, 'never more than the bid');
  assert.equal(settleCost(3n, 60, 0), 0n, 'a second of a bid this small rounds down to 0');
});
