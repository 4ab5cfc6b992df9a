/**
 * The node benchmark's machinery: the generated chain is what it claims and is cached, the options
 * parse, the goals and the report read the figures right, and one small `--quick` run end to end on
 * real node processes writes nothing. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Chain } from '../../core/chain/chain.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { readIdentityFile } from '../../host-node/data-dir.ts';
import { LevelStore } from '../../host-node/leveldb-store.ts';
import { captureOutput } from '../../test/capture-output.ts';
import { runBench } from '../cli.ts';
import { processCpuMs } from '../lib/processes.ts';
import { beginMarker, endMarker, resultPaths, writeReport } from '../lib/results.ts';
import { applyLocally, checkSignaturesAlone, firstRangeAt, type LocalRun, type NetworkRun, type SignatureRun } from './cases.ts';
import { ACCOUNTS, chainPath, sourceChain } from './chain.ts';
import { parseMeshBenchArgs } from './node.ts';
import { evaluateMeshGoals, MESH_REPORT, type MeshReport, renderMeshSection } from './report.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-mesh-bench-test-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

test('the generated chain: the blocks and transfers it claims, on the devnet with the given interval, cached', async () => {
  const spec = { blocks: 30, transfersPerBlock: 5, blockIntervalMs: 200, cacheDir: dir };
  const lines: string[] = [];
  const source = await sourceChain(spec, (l) => lines.push(l));
  assert.ok(source.info.generateSeconds !== null, 'built on first use');
  assert.match(lines[0]!, /^building a chain of 30 blocks/);
  // Block 1 holds only the reward (nobody has credits before it); every later block the transfers.
  assert.equal(source.info.txs, 30 + 29 * 5);
  assert.equal(source.info.accounts, ACCOUNTS);
  assert.equal(source.params.network, 'mesh-devnet');
  assert.equal(source.params.blockIntervalMs, 200);
  const identity = await readIdentityFile(join(source.dataDir, 'identity.json'));
  const store = await LevelStore.open(chainPath(source.dataDir, source.params));
  try {
    const chain = await Chain.open({ store, params: source.params });
    assert.equal(chain.tip.height, 30);
    assert.equal(toHex(chain.tip.hash), source.info.tipHash);
    const blocks = await chain.blocksFrom(1, 30);
    assert.equal(
      blocks.reduce((n, b) => n + b.txs.length, 0),
      source.info.txs,
    );
    assert.equal(
      blocks.reduce((n, b) => n + b.bytes.length, 0),
      source.info.blockBytes,
    );
    assert.ok(
      blocks.every((b) => toHex(b.header.producer) === toHex(identity.publicKey)),
      "produced by the data directory's identity",
    );
    const kinds = new Set(blocks.flatMap((b) => b.txs.slice(1).map((t) => t.body.kind)));
    assert.deepEqual([...kinds], ['Transfer']);
    const senders = new Set(blocks.flatMap((b) => b.txs.slice(1).map((t) => toHex(t.body.sender))));
    assert.ok(senders.size > 1, 'transfers come from more than the producer');
  } finally {
    await store.close();
  }
  const again = await sourceChain(spec);
  assert.equal(again.info.generateSeconds, null, 'found in the cache');
  assert.equal(again.info.tipHash, source.info.tipHash);
});

test('the local replay applies every block and ends on the stored tip', async () => {
  const source = await sourceChain({ blocks: 30, transfersPerBlock: 5, blockIntervalMs: 200, cacheDir: dir });
  const run = await applyLocally(source, await mkdtemp(join(dir, 'local-')));
  assert.ok(run.totalMs > 0 && run.readMs > 0 && run.applyMs > 0);
  assert.ok(Math.abs(run.totalMs - run.readMs - run.applyMs) < 1e-6);
  assert.ok(run.cpuMs > 0);
});

test('the signatures alone: every header and sender of the stored chain checked, all good', async () => {
  const source = await sourceChain({ blocks: 30, transfersPerBlock: 5, blockIntervalMs: 200, cacheDir: dir });
  const run = await checkSignaturesAlone(source);
  // Each block's header and reward, and 5 transfers from block 2 on.
  assert.equal(run.signatures, 30 * 2 + 29 * 5);
  assert.ok(run.totalMs > 0 && run.cpuMs > 0);
});

test('options: defaults, --quick defaults, and refusals', () => {
  const full = parseMeshBenchArgs([]);
  assert.deepEqual(
    { blocks: full.blocks, runs: full.runs, transfers: full.transfers, perBlock: full.transfersPerBlock, interval: full.blockIntervalMs, write: full.write },
    { blocks: 10_000, runs: 3, transfers: 200, perBlock: 20, interval: 1_000, write: true },
  );
  const quick = parseMeshBenchArgs(['--quick']);
  assert.deepEqual(
    { blocks: quick.blocks, runs: quick.runs, transfers: quick.transfers, write: quick.write },
    { blocks: 1_000, runs: 1, transfers: 20, write: false },
  );
  assert.equal(parseMeshBenchArgs(['--quick', '--write']).write, true);
  assert.equal(parseMeshBenchArgs(['--blocks', '0']).blocks, 0);
  assert.throws(() => parseMeshBenchArgs(['--runs', '0']), /--runs takes an integer from 1/);
  assert.throws(() => parseMeshBenchArgs(['--blocks', '1e3']), RangeError);
  assert.throws(() => parseMeshBenchArgs(['--block-interval-ms', '5']), /--block-interval-ms/);
  assert.throws(() => parseMeshBenchArgs(['--nope']), RangeError);
});

test('firstRangeAt reads the first "sync: extended" line of a node log; processCpuMs reads /proc', async () => {
  const log =
    '2026-11-21T08:00:00.100Z p2p: something\n' +
    '2026-11-21T08:00:02.600Z sync: extended to height 500 from 1f1dfb75174ff2b4…\n' +
    '2026-11-21T08:00:04.000Z sync: extended to height 1000 from 1f1dfb75174ff2b4…\n';
  assert.equal(firstRangeAt(log, Date.parse('2026-11-21T08:00:00.000Z')), 2_600);
  assert.equal(firstRangeAt('nothing here\n', 0), null);
  if (process.platform === 'linux') {
    const cpu = await processCpuMs(process.pid);
    assert.ok(cpu !== null && cpu > 0, `own CPU ${cpu} ms`);
  }
  assert.equal(await processCpuMs(undefined), null);
});

function signaturesAlone(totalMs: number): SignatureRun {
  return { totalMs, signatures: 219_990, cpuMs: totalMs * 1.9, othersCpuMs: 0 };
}

function local(totalMs: number): LocalRun {
  return { readMs: totalMs * 0.1, applyMs: totalMs * 0.9, totalMs, cpuMs: totalMs * 1.4, othersCpuMs: 0 };
}

function network(syncMs: number, extra: Partial<NetworkRun> = {}): NetworkRun {
  return { startupMs: 500, totalMs: syncMs + 500, syncMs, servingCpuMs: 4_000, syncingCpuMs: 40_000, othersCpuMs: 0, firstRangeMs: 2_000, ...extra };
}

function fakeReport(signatures: SignatureRun[], locals: LocalRun[], networks: NetworkRun[], gossipMs: number[]): MeshReport {
  return {
    command: 'npx mesh bench mesh',
    date: '2026-11-21T09:00:00.000Z',
    quick: false,
    machine: { cpu: 'Test CPU', cores: 2, os: 'linux 6' },
    node: { version: '24.0.0' },
    catchUp: {
      chain: {
        blocks: 10_000,
        txs: 209_980,
        transfersPerBlock: 20,
        accounts: 8,
        blockIntervalMs: 1_000,
        blockBytes: 33_900_000,
        tipHash: 'ab'.repeat(32),
        generateSeconds: null,
      },
      signatures,
      local: locals,
      network: networks,
      replay: [
        { streamMs: 2_000, firstEventMs: 10, headersMs: 500, blocksMs: 4_000 },
        { streamMs: 2_500, firstEventMs: 12, headersMs: 520, blocksMs: 4_200 },
        { streamMs: 1_800, firstEventMs: 9, headersMs: 480, blocksMs: 3_900 },
      ],
    },
    latency:
      gossipMs.length === 0
        ? null
        : {
            samples: gossipMs.map((g) => ({ gossipMs: g, postMs: 3 })),
            blockIntervalMs: 1_000,
            warmup: 10,
            perBlock: 40,
            heights: [3, 9],
            refused: ['nonce-gap: nonce 58 of d987… is not the next one (30)'],
          },
    source: { commit: 'abc1234', modified: [] },
    elapsedMs: 200_000,
  };
}

test('mesh goals: the catch-up ratio on the medians against 1.5× the signatures alone, the median latency against 100 ms, n/a when unmeasured', () => {
  const met = evaluateMeshGoals(
    fakeReport(
      [signaturesAlone(22_000), signaturesAlone(21_000), signaturesAlone(25_000)],
      [local(25_000), local(24_000), local(30_000)],
      [network(32_000), network(31_000), network(60_000)],
      [4, 5, 6, 1_300],
    ),
  );
  assert.deepEqual(
    met.map((g) => g.met),
    [true, true],
  );
  // Medians: signatures 22 s, local 25 s (1.14×), network 32 s (1.45×); from spawn 32.5 s (1.48×);
  // per run 1.45×, 1.48×, 2.40×.
  assert.match(
    met[0]!.detail,
    /network 32\.0 s after the node's start-up \(313 blocks\/s, 6,562 tx\/s\) vs signatures alone 22\.0 s \(9,545 tx\/s\): 1\.45× \(median of the per-run ratios 1\.48×\)/,
  );
  assert.match(met[0]!.detail, /start-up of 0\.50 s included, 1\.48×; the local replay 25\.0 s \(8,399 tx\/s\), 1\.14× \(medians of 3 runs\)$/);
  assert.match(
    met[1]!.detail,
    /^median 5\.50 ms, p90 1300\.0 ms, max 1300\.0 ms over 4 transfers; the POST's own round trip on the sending node median 3\.00 ms$/,
  );
  const missed = evaluateMeshGoals(fakeReport([signaturesAlone(10_000)], [local(10_000)], [network(25_000)], [150, 120, 90]));
  assert.deepEqual(
    missed.map((g) => g.met),
    [false, false],
  );
  const none = evaluateMeshGoals({ ...fakeReport([], [], [], []), catchUp: null });
  assert.deepEqual(
    none.map((g) => g.met),
    [null, null],
  );
});

test('mesh report: the section and the JSON are written, other sections kept byte for byte', async () => {
  const markdown = join(dir, 'RESULTS.md');
  const json = join(dir, 'results', 'mesh.json');
  const ledger = `${beginMarker('ledger')}\n## Ledger\n\nkept | as is\n${endMarker('ledger')}\n`;
  await writeFile(markdown, `# Results\n\n${ledger}`);
  const report = fakeReport(
    [signaturesAlone(22_000), signaturesAlone(21_000), signaturesAlone(25_000)],
    [local(25_000), { ...local(24_000), othersCpuMs: 12_000 }, local(30_000)],
    [network(32_000), network(31_000, { firstRangeMs: 15_500 }), network(60_000)],
    [4, 5, 6, 1_300],
  );
  const goals = await writeReport(MESH_REPORT, report, { markdown, json });
  const text = await readFile(markdown, 'utf8');
  assert.ok(text.startsWith(`# Results\n\n${ledger}`), 'the ledger section is untouched');
  const section = text.slice(text.indexOf(beginMarker('mesh')), text.indexOf(endMarker('mesh')));
  assert.ok(section.includes(renderMeshSection(report, goals).trim()));
  assert.match(section, /1\. ✅ met: Catch-up: a fresh node syncing 10,000 blocks/);
  assert.match(section, /\| \*\*network\*\*: after the fresh node's start-up \| 32\.0 s \| 313 \| 6,562 \| 1\.45 \| 32\.0 s, 31\.0 s, 60\.0 s \|/);
  assert.match(section, /\| \*\*signatures alone\*\*: 219,990 checks \| 22\.0 s \| 455 \| 9,545 \| 1 \(ref\) \| 22\.0 s, 21\.0 s, 25\.0 s \|/);
  assert.match(section, /The first range came late in run 2 \(15\.5 s\), against 2\.00 s at best/);
  assert.match(section, /Other processes on the machine took 25% of its CPU during local run 2/);
  assert.match(section, /refused 1 of the POSTs with 400 .*`nonce-gap`/);
  assert.match(section, /1 of the transfers took more than half a block interval \(1300\.0 ms\)/);
  // The replay: medians 2.00 s on the stream (5,000 blocks/s), 0.50 s of header pages, 4.00 s of whole blocks.
  assert.match(section, /\| \*\*\/blocks\/stream\*\* on the serving node, to the tip's event \| 2\.00 s \| 5,000 \| 4\.00 \| 2\.00 s, 2\.50 s, 1\.80 s \|/);
  assert.match(section, /\| \*\*header pages\*\* \(blockEventsFrom\) in one process \(baseline\) \| 0\.50 s \| 20,000 \| 1 \(ref\) \|/);
  assert.match(section, /\| whole blocks decoded \(blocksFrom \+ blockEvent\) \| 4\.00 s \| 2,500 \| 8\.00 \|/);
  const saved = JSON.parse(await readFile(json, 'utf8')) as MeshReport & { goals: unknown[] };
  assert.equal(saved.catchUp!.network.length, 3);
  assert.equal(saved.goals.length, 2);
  await writeReport(MESH_REPORT, report, { markdown, json });
  assert.equal(await readFile(markdown, 'utf8'), text, 'a second run replaces its own section and nothing else');
});

test('mesh bench mesh --quick: a small run on real nodes end to end, writing nothing', async () => {
  const { markdown, json } = resultPaths('mesh');
  const results = [markdown, json];
  const before = await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null)));
  const { result: code, output: said } = await captureOutput(process.stdout, () =>
    runBench(['mesh', '--quick', '--blocks', '60', '--transfers-per-block', '5', '--transfers', '5', '--cache-dir', dir]),
  );
  assert.equal(code, 0, said);
  assert.match(said, /run 1: signatures alone .* s \(\d+ checks/);
  assert.match(said, /run 1: local .* s \(read/);
  assert.match(said, /run 1: network .* s after a start-up of/);
  assert.match(said, /run 1: \/blocks\/stream replay .* s \(first event .* s; read here: headers .* s, whole blocks .* s\)/);
  assert.match(said, /(met|MISS) {1,2}Transfer latency: median .* over 5 transfers/);
  assert.match(said, /quick run: bench\/RESULTS\.md and bench\/results\/mesh\.json left as they were/);
  assert.deepEqual(await Promise.all(results.map((p) => readFile(p, 'utf8').catch(() => null))), before);
});
