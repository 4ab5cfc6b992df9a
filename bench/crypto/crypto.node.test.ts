/**
 * The crypto benchmark's own machinery, on Node: the crossover check, openssl parsing, the
 * arguments, the goals, and its section of the results. No speed is asserted anywhere.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseCommand } from '../../host-node/cli/run.ts';
import { type CryptoArgs, cryptoArgs, cryptoCommand } from '../cli.ts';
import { beginMarker, endMarker, writeReport } from '../lib/results.ts';
import { type CaseResult, crossover, type Row, type RuntimeResult } from './cases.ts';
import { parseEd25519Speed, parseHashSpeed } from './openssl.ts';
import { CRYPTO_REPORT, type CryptoReport, evaluateGoals } from './report.ts';

test('crossover: finds where the large side wins for good and checks the constant', () => {
  const sweep = [64, 128, 256, 512, 1024].map((bytes) => ({ bytes, smallNs: bytes, largeNs: 300 }));
  const x = crossover('WEBCRYPTO_MIN_BYTES', 512, sweep, 'wasm', 'native');
  assert.equal(x.lastSmallWins, 256);
  assert.equal(x.firstLargeWins, 512);
  assert.ok(x.estimateBytes !== null && x.estimateBytes > 256 && x.estimateBytes < 512);
  assert.equal(x.agrees, true);
  const wrong = crossover('WEBCRYPTO_MIN_BYTES', 64, sweep, 'wasm', 'native');
  assert.equal(wrong.agrees, false);
  assert.match(wrong.remark, /at 64 B it picks native/);
  const never = crossover(
    'WEBCRYPTO_MIN_BYTES',
    128,
    sweep.map((p) => ({ ...p, largeNs: 1e9 })),
    'wasm',
    'web',
  );
  assert.equal(never.firstLargeWins, null);
  assert.equal(never.agrees, false);
});

test('openssl output is read from the algorithm rows', () => {
  const sha = ['version: 3.0.19', "The 'numbers' are in 1000s of bytes per second processed.", 'type             32 bytes', 'sha256          283933.39k'].join(
    '\n',
  );
  assert.equal(parseHashSpeed(sha), 283933390);
  assert.equal(parseHashSpeed('nothing here'), null);
  const ed = [
    'Got: +F6:0:253:Ed25519:29265.000000:11057.500000 from 0',
    '                              sign    verify    sign/s verify/s',
    ' 253 bits EdDSA (Ed25519)   0.0000s   0.0001s  31687.3  11975.0',
  ].join('\n');
  assert.deepEqual(parseEd25519Speed(ed), { signPerSec: 31687.3, verifyPerSec: 11975 });
  assert.equal(parseEd25519Speed(sha), null);
});

test('bench arguments: runtimes, quick runs write only when asked', () => {
  const crypto = (args: string[]): CryptoArgs => cryptoArgs(parseCommand(cryptoCommand, args).options);
  assert.deepEqual(crypto([]), {
    quick: false,
    write: true,
    runtimes: ['node', 'deno', 'chromium'],
  });
  const quick = crypto(['--quick', '--runtime', 'deno', '--runtime=node']);
  assert.deepEqual([quick.write, quick.runtimes], [false, ['deno', 'node']]);
  assert.equal(crypto(['--quick', '--write']).write, true);
  assert.throws(() => crypto(['--runtime', 'bun']), RangeError);
  assert.throws(() => crypto(['--fast']), RangeError);
});

// A small fake run: one runtime, two cases.
function fakeRow(name: string, role: Row['role'], medianNs: number, referenceNs: number, units: number): Row {
  return {
    name,
    role,
    medianNs,
    opsPerSec: 1e9 / medianNs,
    samplesNs: [medianNs],
    iterations: 1,
    ratio: medianNs / referenceNs,
    units,
  };
}

function fakeReport(): CryptoReport {
  const block: CaseResult = {
    group: 'verify-block',
    title: 'Ed25519 verify of a block',
    unit: 'sig',
    reference: 'node:crypto ×2 cores',
    rows: [
      fakeRow('core verifyBatch (webcrypto) cold', 'core', 50e6, 40e6, 1024),
      fakeRow('core verifyBatch (webcrypto) warm', 'core', 30e6, 40e6, 1024),
      fakeRow('node:crypto ×2 cores', 'baseline', 40e6, 40e6, 1024),
    ],
  };
  const sha = (bytes: number, core: number): CaseResult => ({
    group: 'sha256',
    title: `SHA-256 of ${bytes} B`,
    bytes,
    unit: 'B',
    reference: 'native',
    rows: [fakeRow('core sha256', 'core', core, 100, bytes), fakeRow('native', 'baseline', 100, 100, bytes)],
  });
  const node: RuntimeResult = {
    runtime: 'node',
    version: '24.0.0',
    details: { v8: '13', openssl: '3' },
    backends: ['webcrypto', 'noble'],
    constants: { WEBCRYPTO_MIN_BYTES: 2048 },
    cases: [sha(32, 90), sha(1048576, 140), block],
    crossovers: [],
    notes: [],
    elapsedMs: 1000,
  };
  return {
    command: 'npx mesh bench crypto',
    date: '2026-01-02T03:04:05.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux' },
    runtimes: [node],
    failures: [{ runtime: 'deno', reason: 'not installed' }],
    openssl: { ok: false, reason: 'openssl is not on PATH' },
    elapsedMs: 2000,
  };
}

test('goals are judged on the figures, and n/a where a runtime was not measured', () => {
  const [blockGoal, webGoal, shaGoal] = evaluateGoals(fakeReport());
  assert.equal(blockGoal!.met, false); // 50 ms cold against 40 ms
  assert.match(blockGoal!.detail, /1\.25×/);
  assert.equal(webGoal!.met, null);
  assert.equal(shaGoal!.met, true); // 0.90× at 32 B, 1.40× at 1 MiB
});

test('the crypto report writes the JSON and only its own section of the Markdown', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-bench-'));
  try {
    const markdown = join(dir, 'RESULTS.md');
    const json = join(dir, 'results', 'crypto.json');
    const before = '# Benchmark results\n\nhand-written intro\n';
    const ledger = `${beginMarker('ledger')}\n## Ledger\n\n| a | b |\n${endMarker('ledger')}\n`;
    const after = '\nfooter note\n';
    await writeFile(markdown, `${before}\n${beginMarker('crypto')}\nold crypto figures\n${endMarker('crypto')}\n\n${ledger}${after}`);

    await writeReport(CRYPTO_REPORT, fakeReport(), { markdown, json });
    const first = await readFile(markdown, 'utf8');
    assert.ok(first.startsWith(`${before}\n${beginMarker('crypto')}\n## Crypto\n`));
    assert.ok(!first.includes('old crypto figures'));
    assert.ok(first.endsWith(`${endMarker('crypto')}\n\n${ledger}${after}`));
    assert.match(first, /### Goals/);
    assert.match(first, /### Node 24\.0\.0/);
    assert.match(first, /Not measured: not installed/);
    assert.match(first, /Skipped: openssl is not on PATH/);
    assert.equal(first.split(beginMarker('crypto')).length, 2, 'one crypto section');

    // Writing again replaces the section in place: the document does not grow.
    await writeReport(CRYPTO_REPORT, fakeReport(), { markdown, json });
    assert.equal(await readFile(markdown, 'utf8'), first);

    const saved = JSON.parse(await readFile(json, 'utf8')) as { command: string; machine: { cpu: string }; goals: unknown[] };
    assert.equal(saved.command, 'npx mesh bench crypto');
    assert.equal(saved.machine.cpu, 'Test CPU');
    assert.equal(saved.goals.length, 3);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
