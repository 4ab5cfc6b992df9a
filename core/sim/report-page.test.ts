import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { reportPage } from './report-page.ts';
import { DEFAULT_SIM_OPTIONS, type SimReport } from './run.ts';
import { ticks } from './svg-plot.ts';

const q = (p50: number | null, p99: number | null) => ({ p50, p90: p99, p99 });

const report: SimReport = {
  options: { ...DEFAULT_SIM_OPTIONS, latency: 'planetlab' },
  invariants: [
    { name: 'supply-conservation', checks: 3, held: true, broke: null },
    { name: 'no-confirmed-tx-lost', checks: 2, held: false, broke: { atMs: 390_000, seed: '1', detail: 'tx ab | cd is gone' } },
  ],
  figures: {
    blocks: 3,
    tipHeight: 3,
    propagationMs: { to50: q(90, 120), to90: q(140, 300), to99: q(230, 1_200), blocksShort: 0 },
    forksPerHour: 6,
    orphansPerHour: 6,
    bytesPerNodePerSec: { 'mesh-blocks': 700, 'mesh-netgraph': 8_000, 'rpc jobs.logs': 0 },
    messages: { sent: 2, delivered: 2, latencyMs: q(100, 200) },
    transfers: { submitted: 2, included: 1, toIncludedMs: q(6_000, 6_000) },
    channels: { opened: 0, payments: 0, delivered: 0, closed: 0 },
    jobs: { bid: 0, ran: 0, toRunningMs: q(null, null) },
    healMs: [],
    adversaries: { privateMiners: { mined: 0, released: 0, releases: 0, onFinalChain: 0 }, spam: { sent: 0, included: 0 } },
    churn: { left: 0, rejoined: 0, failed: [] },
  },
  series: {
    propagationCdfMs: { to50: Array.from({ length: 101 }, (_, p) => 90 + p), to90: [], to99: Array.from({ length: 101 }, (_, p) => 230 + 10 * p) },
    blocksPerMinute: [2, 1],
    orphansPerMinute: [1, 0],
  },
};

test('sim report: a Markdown page naming its three plots, each an SVG, the same bytes for the same report', () => {
  const page = reportPage(report);
  assert.deepEqual(Object.keys(page.files).sort(), ['bytes.svg', 'forks.svg', 'propagation.svg']);
  for (const [file, svg] of Object.entries(page.files)) {
    assert.include(page.markdown, `](${file})`);
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/);
    assert.notInclude(svg, 'NaN');
  }
  assert.include(page.markdown, '| `no-confirmed-tx-lost` | 2 | **broke** at 390000 ms: tx ab \\| cd is gone |');
  // Bytes by topic, largest first, nothing for a topic that sent none.
  const bytes = page.files['bytes.svg']!;
  assert.isBelow(bytes.indexOf('mesh-netgraph'), bytes.indexOf('mesh-blocks'));
  assert.notInclude(bytes, 'rpc jobs.logs');
  assert.deepEqual(reportPage(report), page);
});

test('sim report: ticks are round numbers across the range, written without float noise', () => {
  assert.deepEqual(ticks(0, 1), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(ticks(0, 37), [0, 10, 20, 30]);
  assert.deepEqual(ticks(5, 5), [5]);
});
