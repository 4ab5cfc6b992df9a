/** What each peer is to the node, for the pruning order: needed with work in flight, else a recent producer. */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import type { ChannelView } from '../channels/types.ts';
import { toHex } from '../encoding/hex.ts';
import type { JobSummary } from '../jobs/types.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { PeerRanks } from './peer-ranks.ts';

const SELF = key(1);
const job = (status: JobSummary['status'], payer: string, host: string | null): JobSummary =>
  ({ job_id: '00'.repeat(32), status, payer, host, role: 'payer', container_id: null, cost: null, bid: '1' }) as JobSummary;
const channel = (status: ChannelView['status'], payer: string, host: string): ChannelView =>
  ({ channel_id: '00'.repeat(32), status, payer, host }) as ChannelView;

test('peer ranks: producers of recent blocks, from before the start and after; peers with jobs or channels in flight are needed', async () => {
  const clock = testScheduler();
  const chain = await openChain();
  await mine(chain, key(3), 2);
  const jobs: JobSummary[] = [];
  const channels: ChannelView[] = [];
  const ranks = new PeerRanks({
    nodeId: toHex(SELF.publicKey),
    chain,
    clock,
    jobs: { listJobs: () => jobs },
    channels: { listChannels: () => channels },
  });
  await ranks.start();
  try {
    assert.equal(ranks.rank(key(3).publicKey), 'producer', 'a block before the start counts');
    assert.isNull(ranks.rank(key(4).publicKey));
    await mine(chain, key(4), 1);
    assert.equal(ranks.rank(key(4).publicKey), 'producer', 'a block after the start counts');

    const self = toHex(SELF.publicKey);
    const [five, six, seven] = [5, 6, 7].map((i) => toHex(key(i).publicKey)) as [string, string, string];
    jobs.push(job('running', self, five), job('settled', six, self), job('pending', seven, self));
    channels.push(channel('open', self, toHex(key(8).publicKey)), channel('closed', self, toHex(key(9).publicKey)));
    assert.isNull(ranks.rank(key(5).publicKey), 'the jobs are listed again only once a second has passed');
    await clock.advance(1_000);
    assert.equal(ranks.rank(key(5).publicKey), 'needed', 'the host of a running job');
    assert.isNull(ranks.rank(key(6).publicKey), 'a settled job is over');
    assert.equal(ranks.rank(key(7).publicKey), 'needed', 'the payer of a pending job');
    assert.equal(ranks.rank(key(8).publicKey), 'needed', 'the host of an open channel');
    assert.isNull(ranks.rank(key(9).publicKey), 'a closed channel is over');
    jobs.push(job('running', self, toHex(key(3).publicKey)));
    await clock.advance(1_000);
    assert.equal(ranks.rank(key(3).publicKey), 'needed', 'needed outranks producer');
  } finally {
    ranks.stop();
  }
});
