/**
 * The ledger benchmark's own machinery, on Node: its block is one a node accepts, with every kind
 * and exactly the signatures it claims; the state-root case and the hash counter count what they
 * say; the goals and the report read the figures right; the command refuses what it cannot do.
 * No speed is asserted anywhere.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { verifyBatch } from '../../core/crypto/ed25519.ts';
import { countingSha256 } from '../../core/crypto/sha256.test-util.ts';
import { coreSha256, sha256 } from '../../core/crypto/sha256.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { TX_KINDS } from '../../core/ledger/tx.ts';
import { applyBlock } from '../../core/ledger/validate.ts';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { beginMarker, endMarker, writeReport } from '../lib/results.ts';
import { APPLY_BLOCK, type BlockCase, DECODE_APPLY, measureBlock, measureRoots, ROOT_CHANGES, type RootCase, SIGNATURES } from './cases.ts';
import { accountsState, BLOCK_MIX, blockWorkload, fillerId } from './fixture.ts';
import { watchOthers } from './node.ts';
import { evaluateLedgerGoals, LEDGER_REPORT, type LedgerReport, renderLedgerSection } from './report.ts';

const small = { accounts: 600, participants: 400 };

test('the benchmark block: 1,024 valid transactions of all sixteen kinds, accepted by applyBlock', async () => {
  const w = await blockWorkload(small);
  assert.equal(w.block.txs.length, 1024);
  assert.deepEqual(new Set(Object.keys(w.kinds)), new Set(TX_KINDS));
  for (const [kind, count] of Object.entries(BLOCK_MIX)) assert.equal(w.kinds[kind as keyof typeof BLOCK_MIX], count, kind);
  // One signature per transaction, one more per co-signed settlement or close, two per piece of
  // evidence, and the header's.
  const extra = BLOCK_MIX.JobSettle + BLOCK_MIX.ChannelClose + 2 * BLOCK_MIX.SlashEquivocation;
  assert.equal(w.messages.length, 1 + 1024 + extra);
  assert.ok((await verifyBatch(w.messages)).every(Boolean), 'every signature the block carries verifies');
  assert.equal(w.stateEntries, w.state.size);
  const rootBefore = toHex(w.state.stateRoot());
  const mark = w.state.mark();
  const applied = await applyBlock(w.state, w.block, w.parent, w.params);
  assert.equal(applied.effects.length, 1024);
  assert.equal(applied.changes.length, w.changedEntries);
  assert.equal(toHex(w.state.stateRoot()), toHex(w.block.header.state_root));
  w.state.revert(mark);
  assert.equal(toHex(w.state.stateRoot()), rootBefore, 'the workload hands over the parent state');
});

test('the block case: every contender measured, ratios against the signatures, the parent state handed back', async () => {
  const w = await blockWorkload(small);
  const root = toHex(w.state.stateRoot());
  const lines: string[] = [];
  const c = await measureBlock(w, 'test', { quick: true, log: (l) => lines.push(l), countHashes: true });
  assert.equal(toHex(w.state.stateRoot()), root, 'the state is the parent state again');
  assert.equal(w.state.mark(), 0, 'and its journal is empty');
  const row = (name: string): BlockCase['rows'][number] => c.rows.find((r) => r.name === name)!;
  assert.equal(row(SIGNATURES).ratio, 1);
  assert.equal(c.ratio, row(APPLY_BLOCK).medianNs / row(SIGNATURES).medianNs);
  assert.equal(c.ratioWithDecode, row(DECODE_APPLY).medianNs / row(SIGNATURES).medianNs);
  for (const r of c.rows) assert.equal(r.samplesNs.length, 5, r.name);
  const paired = row(APPLY_BLOCK)
    .samplesNs.map((ns, i) => ns / row(SIGNATURES).samplesNs[i]!)
    .sort((a, b) => a - b);
  assert.equal(c.pairedRatio, paired[2]);
  assert.equal(c.signatures, w.messages.length);
  assert.ok(c.stateRootHashes! > 2 * c.changedEntries, 'a key and a value hash per changed entry, and the trie above');
  assert.match(lines.join('\n'), /applyBlock ÷ signatures alone: /);
});

test('the benchmark block is the same on every run', async () => {
  const [a, b] = [await blockWorkload(small), await blockWorkload(small)];
  assert.equal(toHex(a.block.hash), toHex(b.block.hash));
  assert.notEqual(toHex((await blockWorkload({ ...small, seed: 2 })).block.hash), toHex(a.block.hash));
});

test('filler accounts: distinct ids, a state of exactly that many entries', () => {
  const ids = new Set(Array.from({ length: 5000 }, (_, i) => toHex(fillerId(i))));
  assert.equal(ids.size, 5000);
  assert.equal(accountsState(300).size, 300);
});

test('watchOthers: a share of the CPU time, not counting the work of this process', () => {
  const stop = watchOthers();
  const until = performance.now() + 200;
  let spins = 0;
  while (performance.now() < until) spins++;
  const share = stop();
  assert.ok(spins > 0 && Number.isFinite(share) && share >= 0 && share <= 1, `share ${share}`);
});

test('countingSha256 counts the SHA-256 computations of the work, each message of a batch, and hashes as its inner one', () => {
  const { hasher, count } = countingSha256(coreSha256);
  assert.equal(
    count(() => {}),
    0,
  );
  assert.equal(
    count(() => {
      for (let i = 0; i < 3; i++) hasher.hash(Uint8Array.of(i));
      hasher.batch(new Uint8Array(6), [2, 4, 6], new Uint8Array(96));
    }),
    6,
  );
  assert.equal(toHex(hasher.hash(new TextEncoder().encode('abc'))), toHex(sha256(new TextEncoder().encode('abc'))));
});

test('the state-root case: one point per k, hashes per entry falling as changed entries share the trie', async () => {
  const lines: string[] = [];
  const roots = await measureRoots([2_000], { quick: true, log: (l) => lines.push(l), countHashes: true });
  assert.equal(roots.length, 1);
  const [c] = roots as [RootCase];
  assert.equal(c.entries, 2_000);
  assert.equal(c.memoryBytes, null, 'no probe, no memory figure');
  assert.deepEqual(
    c.points.map((p) => p.changed),
    [...ROOT_CHANGES],
  );
  const [one, hundred, many] = c.points.map((p) => p.hashesPerEntry!) as [number, number, number];
  // One entry: its key and value hashes, then one branch per level, about log₂(2,000) ≈ 11 of them.
  assert.ok(one >= 2 + 8 && one <= 2 + 30, `${one} hashes for one entry`);
  assert.ok(hundred < one && many < hundred, `${one}, ${hundred}, ${many}: shared branches are hashed once`);
  // With more changes than entries, every entry's leaf and every branch is rehashed at most once.
  assert.ok(many * 3_000 <= 2 * 2_000 + 2 * 3_000, 'never more than the whole trie plus the key and value hashes');
  assert.match(lines[0]!, /^ {2}2,000 accounts: built in /);
});

function fakeBlockCase(sha: string, signaturesNs: number, applyNs: number): BlockCase {
  const row = (name: string, medianNs: number, phase: boolean): BlockCase['rows'][number] => ({
    name,
    role: name === SIGNATURES ? 'baseline' : 'core',
    medianNs,
    opsPerSec: 1e9 / medianNs,
    samplesNs: [medianNs],
    iterations: 1,
    ratio: medianNs / signaturesNs,
    phase,
  });
  return {
    sha256: sha,
    txs: 1024,
    signatures: 1209,
    kinds: { Transfer: 381, UptimeReward: 1 },
    blockBytes: 177_537,
    stateEntries: 10_356,
    changedEntries: 1_974,
    rows: [row(SIGNATURES, signaturesNs, true), row(APPLY_BLOCK, applyNs, false), row(DECODE_APPLY, applyNs + 3e6, false), row('state root', 8e6, true)],
    ratio: applyNs / signaturesNs,
    pairedRatio: applyNs / signaturesNs,
    ratioWithDecode: (applyNs + 3e6) / signaturesNs,
    stateRootHashes: 11_244,
    othersCpu: 0.01,
  };
}

function fakeRoot(size: number, scale: number): RootCase {
  return {
    size,
    entries: size,
    buildMs: size / 1000,
    firstRootMs: size / 500,
    memoryBytes: size * 1500,
    points: ROOT_CHANGES.map((k) => {
      const perEntryNs = 5000 * scale;
      return { changed: k, medianNs: k * perEntryNs, perEntryNs, samples: 15, hashesPerEntry: 10 };
    }),
  };
}

function fakeReport(blocks: BlockCase[], roots: RootCase[]): LedgerReport {
  return {
    command: 'npx mesh bench ledger',
    date: '2026-11-21T08:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0', v8: '13', openssl: '3' },
    blocks,
    roots,
    source: { commit: 'abc1234', modified: ['core/ledger/state.ts'] },
    elapsedMs: 60_000,
  };
}

test('ledger goals: the block ratio against 1.25× (1.35× with decoding), the root growth from 10⁴ to 10⁶ against 10×, n/a when unmeasured', () => {
  const roots = [fakeRoot(10_000, 1), fakeRoot(100_000, 1.5), fakeRoot(1_000_000, 3)];
  const met = evaluateLedgerGoals(fakeReport([fakeBlockCase('native', 60e6, 72e6), fakeBlockCase('wasm', 60e6, 95e6)], roots));
  assert.deepEqual(
    met.map((g) => g.met),
    [true, true],
  );
  assert.match(met[0]!.detail, /1\.20× \(median of the per-round ratios 1\.20×\); with the block's decoding 1\.25×/);
  assert.match(met[0]!.detail, /; with the wasm crypto 1\.58×$/);
  assert.match(met[1]!.detail, /3\.00× at k = 1, 3\.00× at k = 100, 3\.00× at k = 3,000/);
  const slow = [fakeRoot(10_000, 1), fakeRoot(1_000_000, 12)];
  const missed = evaluateLedgerGoals(fakeReport([fakeBlockCase('native', 60e6, 76e6)], slow));
  assert.deepEqual(
    missed.map((g) => g.met),
    [false, false],
  );
  // 1.25× without decoding, but 1.30× with it: still met; 1.37× with it is not.
  assert.equal(evaluateLedgerGoals(fakeReport([fakeBlockCase('native', 60e6, 75e6)], roots))[0]!.met, true);
  assert.equal(evaluateLedgerGoals(fakeReport([{ ...fakeBlockCase('native', 60e6, 75e6), ratioWithDecode: 1.37 }], roots))[0]!.met, false);
  const busy = evaluateLedgerGoals(fakeReport([{ ...fakeBlockCase('native', 60e6, 72e6), othersCpu: 0.4 }], roots));
  assert.match(busy[0]!.detail, /other processes took 40% of the CPU meanwhile, so this reads low$/);
  assert.doesNotMatch(met[0]!.detail, /other processes/, 'a quiet machine is not mentioned');
  const none = evaluateLedgerGoals(fakeReport([], [fakeRoot(10_000, 1), fakeRoot(100_000, 2)]));
  assert.deepEqual(
    none.map((g) => g.met),
    [null, null],
  );
});

test('ledger report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-ledger-bench-'));
  try {
    const markdown = join(dir, 'RESULTS.md');
    const json = join(dir, 'results', 'ledger.json');
    const crypto = `${beginMarker('crypto')}\n## Crypto\n\nkept | as is\n${endMarker('crypto')}\n`;
    await writeFile(markdown, `# Results\n\n${crypto}`);
    const report = fakeReport([fakeBlockCase('native', 60e6, 72e6)], [fakeRoot(10_000, 1), fakeRoot(1_000_000, 3)]);
    const goals = await writeReport(LEDGER_REPORT, report, { markdown, json });
    const text = await readFile(markdown, 'utf8');
    assert.ok(text.startsWith(`# Results\n\n${crypto}`), 'the crypto section is untouched');
    const section = text.slice(text.indexOf(beginMarker('ledger')), text.indexOf(endMarker('ledger')));
    assert.ok(section.includes(renderLedgerSection(report, goals).trim()));
    assert.match(section, /1\. ✅ met: Node: validating and applying a full block/);
    assert.match(section, /\| 1,000,000 \| 1\.00 s \| 2\.00 s \| 1431 MiB \(1500 B\/account\) \|/);
    assert.match(section, /with uncommitted changes to `core\/ledger\/state\.ts`/);
    const saved = JSON.parse(await readFile(json, 'utf8')) as LedgerReport & { goals: unknown[] };
    assert.equal(saved.blocks[0]!.ratio, 1.2);
    assert.equal(saved.goals.length, 2);
    // A second run replaces its own section and nothing else.
    await writeReport(LEDGER_REPORT, report, { markdown, json });
    assert.equal(await readFile(markdown, 'utf8'), text);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('mesh bench ledger refuses --runtime: it runs on Node only', async () => {
  const { result: code, output: said } = await captureOutput(process.stderr, () => runBench(['ledger', '--runtime', 'deno']));
  assert.equal(code, 2);
  assert.match(said, /runs on Node only/);
});
