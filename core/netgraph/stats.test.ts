import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { meshStats, REGION_RTT_MS } from './stats.ts';
import { type Coordinate, estimateRttMs } from './vivaldi.ts';

/** Regions as meshStats counted them before the sweep: every pair of coordinates compared. */
function regionsByEveryPair(coordinates: ReadonlyMap<string, Coordinate>): number {
  const nodes = [...coordinates.keys()];
  const parent = nodes.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  for (let i = 0; i < nodes.length; i++) {
    for (let j = i + 1; j < nodes.length; j++) {
      if (estimateRttMs(coordinates.get(nodes[i]!)!, coordinates.get(nodes[j]!)!) < REGION_RTT_MS) parent[find(i)] = find(j);
    }
  }
  return new Set(nodes.map((_, i) => find(i))).size;
}

/** A small seeded generator: numbers in [0, 1). */
function generator(seed: number): () => number {
  let x = seed * 2_654_435_761 + 1;
  return () => {
    x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
    return x / 2 ** 32;
  };
}

test('stats: regions by the sweep along the first axis are those of every pair, negative adjustments and all', () => {
  for (let round = 0; round < 20; round++) {
    const float = generator(round);
    const coordinates = new Map<string, Coordinate>();
    // Nodes strung along the first axis 20 to 40 ms apart, a little off it on the others, with
    // negative adjustments of up to 6 ms: which neighbours join turns on the adjustments.
    let along = 0;
    for (let n = 0; n < 150; n++) {
      along += 0.02 + float() * 0.02;
      coordinates.set(`node-${n}`, {
        vec: Array.from({ length: 8 }, (_, d) => (d === 0 ? along : (float() - 0.5) * 0.004)),
        height: float() * 0.001,
        error: 0.5,
        adjustment: -float() * 0.006,
      });
    }
    const self = 'node-0';
    const stats = meshStats({ self, known: new Set(coordinates.keys()), reachable: new Set(), measured: [], leastMeasured: [], coordinates });
    const expected = regionsByEveryPair(coordinates);
    assert.isAbove(expected, 1, 'the clusters stay apart');
    assert.isBelow(expected, 150, 'nodes within a cluster join');
    assert.equal(stats.regions, expected, `round ${round}`);
  }
});
