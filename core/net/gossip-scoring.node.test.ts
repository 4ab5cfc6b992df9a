// The scoring parameters through gossipsub's own score function: what docs/network.md, "Peer
// scoring", says they do. On Node only: gossipsub's score module reaches @libp2p/crypto, whose
// browser file the browser test runner's resolver does not pick (the wallet's bundle does).
import { PeerScore } from '@libp2p/gossipsub/score';
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { GOSSIP_SCORE_THRESHOLDS, gossipScoreParams, MAX_POSITIVE_SCORE } from './gossip-scoring.ts';
import { TOPICS } from './network.ts';

const quiet = Object.assign(() => {}, { error: () => {}, trace: () => {}, newScope: () => quiet, enabled: false });
const logger = { forComponent: () => quiet };

function scores(): PeerScore {
  return new PeerScore(gossipScoreParams(), null, logger as never, { scoreCacheValidityMs: 0 });
}

test('gossip scoring: gossipsub accepts the parameters, and a peer can earn at most 50 per unit of topic weight', () => {
  const params = gossipScoreParams();
  const weights = Object.values(params.topics).reduce((sum, t) => sum + t.topicWeight, 0);
  assert.closeTo(MAX_POSITIVE_SCORE, 50 * weights, 1e-9);
  assert.closeTo(params.topicScoreCap, MAX_POSITIVE_SCORE / 2, 1e-9);
  for (const topic of Object.values(TOPICS)) assert.property(params.topics, topic);
});

test('gossip scoring: invalid messages pass the gossip, publish and graylist thresholds as their square grows', () => {
  const score = scores();
  score.addPeer('junk');
  score.addIP('junk', '203.0.113.7');
  const passed: Record<string, number> = {};
  for (let n = 1; n <= 40; n++) {
    score.markInvalidMessageDelivery('junk', TOPICS.transactions);
    const now = score.score('junk');
    assert.closeTo(now, -MAX_POSITIVE_SCORE * n * n, 1e-6, 'each invalid message, squared, costs all a peer can earn');
    for (const [name, threshold] of Object.entries(GOSSIP_SCORE_THRESHOLDS)) if (now < threshold && passed[name] === undefined) passed[name] = n;
  }
  const expected = (threshold: number): number => Math.floor(Math.sqrt(-threshold / MAX_POSITIVE_SCORE)) + 1;
  assert.equal(passed.gossipThreshold, expected(GOSSIP_SCORE_THRESHOLDS.gossipThreshold));
  assert.equal(passed.publishThreshold, expected(GOSSIP_SCORE_THRESHOLDS.publishThreshold));
  assert.equal(passed.graylistThreshold, expected(GOSSIP_SCORE_THRESHOLDS.graylistThreshold));
  assert.isAtMost(passed.gossipThreshold!, 9, 'a handful of junk messages stop gossip to the peer');
});

test('gossip scoring: identities that came and went on loopback cost its other peers nothing; on a public address, past 3 peers, the square of the surplus', () => {
  for (const [ip, surplusCost] of [
    ['127.0.0.1', 0],
    ['203.0.113.7', MAX_POSITIVE_SCORE / 2],
  ] as const) {
    const score = scores();
    score.addPeer('honest');
    score.addIP('honest', ip);
    for (let i = 0; i < 13; i++) {
      score.addPeer(`throwaway-${i}`);
      score.addIP(`throwaway-${i}`, ip);
      // Gone, but kept for retainScore with its address, as gossipsub does.
      score.removePeer(`throwaway-${i}`);
    }
    assert.closeTo(score.score('honest'), -surplusCost * (14 - 3) ** 2, 1e-6, ip);
  }
});
