import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytesBetween, parseSs } from './cases.ts';
import { evaluateNetgraphGoals, type NetgraphReport, renderNetgraphSection } from './report.ts';

const SS = [
  '0      0       127.0.0.1:42231 127.0.0.1:57442 users:(("MainThread",pid=25983,fd=40))',
  '\t bbr wscale:10,10 rto:204 bytes_sent:8331172 bytes_retrans:2753 bytes_acked:8328419 bytes_received:79907 segs_out:1',
  'ESTAB 0 0 127.0.0.1:37315 127.0.0.1:37994 users:(("MainThread",pid=25984,fd=46))',
  '\t cubic bytes_sent:14034 bytes_acked:14034 bytes_received:756585',
  '0 0 127.0.0.1:1 127.0.0.1:2',
  '\t cubic bytes_acked:1 bytes_received:1',
].join('\n');

test('bench netgraph: ss lines are read with or without the state column; sockets of no process are left out', () => {
  assert.deepEqual(parseSs(SS), [
    { pid: 25983, key: '127.0.0.1:42231 127.0.0.1:57442', sent: 8328419, received: 79907 },
    { pid: 25984, key: '127.0.0.1:37315 127.0.0.1:37994', sent: 14034, received: 756585 },
  ]);
});

test('bench netgraph: bytes between two readings per process; a socket opened in between counts from 0', () => {
  const before = [{ pid: 1, key: 'x', sent: 100, received: 50 }];
  const after = [
    { pid: 1, key: 'x', sent: 160, received: 70 },
    { pid: 1, key: 'y', sent: 5, received: 6 },
    { pid: 2, key: 'z', sent: 1, received: 2 },
  ];
  assert.deepEqual(
    [...bytesBetween(before, after)],
    [
      [1, { sent: 65, received: 26 }],
      [2, { sent: 1, received: 2 }],
    ],
  );
});

test('bench netgraph: the report gives the cost as the difference of the two runs at each size', () => {
  const run = (nodes: number, pingIntervalMs: number, bytes: number) => ({
    nodes,
    pingIntervalMs,
    windowMs: 60_000,
    bytesPerMinute: [bytes, bytes],
    peers: [2, 2],
    links: [3, 3],
    coordinates: [2, 2],
  });
  const report: NetgraphReport = {
    command: 'npx mesh bench netgraph',
    date: '2026-11-27T15:00:00.000Z',
    quick: false,
    machine: { cpu: 'cpu', cores: 2, os: 'linux' },
    elapsedMs: 1000,
    node: { version: '24' },
    blockIntervalMs: 5000,
    sizes: [3, 10].map((nodes) => ({ nodes, measuring: run(nodes, 10_000, 30_000), off: run(nodes, 86_400_000, 20_000) })),
  };
  const [goal] = evaluateNetgraphGoals(report);
  assert.equal(goal!.met, true);
  assert.match(goal!.detail!, /3 nodes: 10\.0 kB per node per minute, next to 20\.0 kB/);
  assert.match(renderNetgraphSection(report), /\*\*10 nodes: the measurement's cost\*\* \| \*\*10\.0 kB\*\*/);
  assert.equal(evaluateNetgraphGoals({ ...report, sizes: report.sizes.slice(0, 1) })[0]!.met, null);
});
