/**
 * `mesh channel` against real `mesh node --devnet` processes (a payer that mines, a host that
 * follows): each command finds its node through the data directory as a user's would, and what it
 * sends, prints and exits with is checked against what the nodes then show.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getJson, type MeshProcess, startNode, stopAll, tcpAddress, waitFor } from '../../test/mesh-process.ts';
import { channelCommand } from './channels.ts';
import { runCommand } from './run.ts';

const CREDIT = 10n ** 18n;

let payer: MeshProcess;
let host: MeshProcess;

before(async () => {
  payer = await startNode({ mine: true, blockIntervalMs: 250 });
  host = await startNode({ blockIntervalMs: 250, bootstrap: [tcpAddress(payer)] });
  await waitFor('the payer has 20 credits', async () => BigInt((await getJson<{ balance: string }>(payer, '/status')).balance) >= 20n * CREDIT, 30_000);
});

after(() => stopAll());

/** Runs `mesh channel …args` on `node`'s data directory; its exit code and output. */
async function mesh(node: MeshProcess, args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCommand(channelCommand, [...args, '--data-dir', node.dataDir], 'mesh channel', {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
  });
  return { code, out, err };
}

interface Channel {
  channel_id: string;
  status: string;
  cumulative: string;
  capacity: string;
  expiry_height: number;
  settlement: { cumulative: string } | null;
}

const channel = (node: MeshProcess, id: string): Promise<Channel> => getJson<Channel>(node, `/channels/${id}`);

function when(node: MeshProcess, id: string, status: string): Promise<Channel> {
  return waitFor(`${status} on ${node === payer ? 'the payer' : 'the host'}`, async () => {
    const c = await channel(node, id);
    return c.status === status && c;
  });
}

test('mesh channel open, ls, pay on the payer, then close on the host with a receipt handed over', async () => {
  const opened = await mesh(payer, ['open', host.nodeId, '2.5']);
  assert.equal(opened.code, 0, opened.err);
  const id = opened.out.trim();
  assert.match(id, /^[0-9a-f]{64}$/);
  const { height } = await getJson<{ height: number }>(payer, '/status');
  assert.match(
    opened.err,
    new RegExp(`^channel of 2\\.5 credits to ${host.nodeId.slice(0, 16)}…, the host may close it up to height (${height + 1440}|${height + 1439})\\n$`),
  );
  await when(host, id, 'open');

  const listed = await mesh(payer, ['ls']);
  assert.equal(listed.code, 0, listed.err);
  const [head, row] = listed.out.split('\n');
  assert.match(head!, /^CHANNEL +ROLE +STATUS +CAPACITY +PAID +EXPIRY +WITH$/);
  assert.match(row!, new RegExp(`^${id.slice(0, 16)} +payer +open +2\\.5 +0 +\\d+ +${host.nodeId.slice(0, 16)}$`));
  const json = JSON.parse((await mesh(host, ['ls', '--json'])).out) as Channel[];
  assert.deepEqual(
    json.map((c) => [c.channel_id, c.capacity]),
    [[id, ((25n * CREDIT) / 10n).toString()]],
  );

  const first = await mesh(payer, ['pay', id.slice(0, 10), '0.5']);
  assert.equal(first.code, 0, first.err);
  const sig = /^payer_sig +([0-9a-f]{128})$/m.exec(first.out)?.[1];
  assert.ok(sig, first.out);
  assert.match(first.out, new RegExp(`^channel +${id}\\ncumulative +0\\.5\\n`));
  assert.equal(first.err, 'the host holds it\n');
  const second = await mesh(payer, ['pay', id, '1.25', '--json']);
  assert.equal(JSON.parse(second.out).cumulative, ((125n * CREDIT) / 100n).toString());
  const lower = await mesh(payer, ['pay', id, '1']);
  assert.equal(lower.code, 1);
  assert.match(lower.err, /^mesh channel pay: Channel not in a state that allows this \(409\): a receipt for 1\.25 credits is signed already/);

  // The older receipt, handed over by hand: the host closes with the better one it holds.
  const closed = await mesh(host, ['close', id.slice(0, 16), '--cumulative', '0.5', '--sig', sig]);
  assert.equal(closed.code, 0, closed.err);
  assert.match(closed.out, /^[0-9a-f]{64}\n$/);
  assert.equal(closed.err, 'closing: 1.25 credits to the host (1.2375 after the burn of 0.0125), 1.25 back to the payer\n');
  const done = await when(payer, id, 'closed');
  assert.equal(done.settlement!.cumulative, ((125n * CREDIT) / 100n).toString());
  assert.match((await mesh(payer, ['ls'])).out, new RegExp(`^${id.slice(0, 16)} +payer +closed +2\\.5 +1\\.25 `, 'm'));
  const twice = await mesh(host, ['close', id]);
  assert.equal(twice.code, 1);
  assert.match(twice.err, /\(409\): channel [0-9a-f]{64} is closed/);
});

test('mesh channel expire: refused before the expiry height with the height it may, then done after it', async () => {
  const { height } = await getJson<{ height: number }>(payer, '/status');
  const opened = await mesh(payer, ['open', host.nodeId, '1', '--expiry-height', String(height + 12)]);
  assert.equal(opened.code, 0, opened.err);
  const id = opened.out.trim();
  await when(payer, id, 'open');
  const early = await mesh(payer, ['expire', id]);
  assert.equal(early.code, 1);
  assert.match(early.err, new RegExp(`may be expired from height ${height + 13}`));
  await waitFor('past the expiry height', async () => (await getJson<{ height: number }>(payer, '/status')).height >= height + 12, 30_000);
  const expired = await mesh(payer, ['expire', id.slice(0, 8)]);
  assert.equal(expired.code, 0, expired.err);
  assert.match(expired.out, /^[0-9a-f]{64}\n$/);
  assert.equal(expired.err, 'expiring: 1 credits back to the payer\n');
  await when(payer, id, 'expired');
  const onHost = await mesh(host, ['expire', id]);
  assert.equal(onHost.code, 1, 'only the payer expires');
});

test('mesh channel refuses bad arguments with exit 2 before asking the node', async () => {
  const cases: [string[], RegExp][] = [
    [['open', 'B2'.repeat(32), '1'], /<host> must be a node id/],
    [['open', host.nodeId, '0'], /<credits> must be more than 0/],
    [['open', host.nodeId, '1', '--expiry-height', '-3'], /--expiry-height/],
    [['pay', 'xyz', '1'], /<channel-id> must be a channel id/],
    [['pay', 'ab', '1.5.5'], /<cumulative-credits>/],
    [['close', 'ab', '--cumulative', '1'], /--cumulative and --sig go together/],
    [['close', 'ab', '--sig', 'ab'], /--sig must be 128 lowercase hex characters/],
  ];
  for (const [args, message] of cases) {
    const refused = await mesh(payer, args);
    assert.equal(refused.code, 2, args.join(' '));
    assert.match(refused.err, message);
  }
  const unknown = await mesh(payer, ['pay', 'ffff', '1']);
  assert.deepEqual([unknown.code, unknown.err], [1, 'mesh channel pay: this node is party to no channel whose id starts with ffff\n']);
});
