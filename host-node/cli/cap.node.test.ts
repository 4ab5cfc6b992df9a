/**
 * `mesh cap` and `mesh trust` in-process: issue, delegate and inspect against real data directories
 * (identity files on disk, no node), revoke and trust against a real `mesh node --devnet --mine`
 * process, whose chain then records them.
 */

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { checkToken } from '../../core/capabilities/check.ts';
import { CapabilityError } from '../../core/capabilities/errors.ts';
import { A, B, C, H } from '../../core/capabilities/fixtures.test-util.ts';
import { decodeToken, encodeToken, linkId, MAX_LINKS, type Token } from '../../core/capabilities/token.ts';
import type { SigningKey } from '../../core/crypto/ed25519.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { devnet, MAINNET } from '../../core/ledger/params.ts';
import { getJson, type MeshProcess, startNode, stopAll, waitFor } from '../../test/mesh-process.ts';
import { IDENTITY_FILE, writeIdentityFile } from '../data-dir.ts';
import { capCommand } from './cap.ts';
import type { Command } from './command.ts';
import { runCommand } from './run.ts';
import { trustCommand } from './trust.ts';

const DEVNET = devnet().network;
let root: string;
/** A data directory per key: H the host, A and B delegates. */
const dirs = new Map<SigningKey, string>();

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mesh-cap-'));
  for (const [name, key] of [
    ['h', H],
    ['a', A],
    ['b', B],
  ] as const) {
    const dir = join(root, name);
    await mkdir(dir);
    await writeIdentityFile(join(dir, IDENTITY_FILE), key);
    dirs.set(key, dir);
  }
});
after(async () => {
  await stopAll();
  await rm(root, { recursive: true, force: true });
});

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

async function run(cmd: Command, path: string, args: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await runCommand(cmd, args, path, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

const cap = (args: string[]): Promise<Run> => run(capCommand, 'mesh cap', args);
const id = (key: SigningKey): string => toHex(key.publicKey);
const dataDir = (key: SigningKey): string[] => ['--data-dir', dirs.get(key)!];
const now = (): number => Math.floor(Date.now() / 1000);

/** Issues from `key`'s data directory; the token it printed. */
async function issue(key: SigningKey, args: string[]): Promise<Token> {
  const r = await cap(['issue', ...args, ...dataDir(key)]);
  assert.equal(r.code, 0, r.err);
  return decodeToken(r.out.trim());
}

function check(token: Token, holder: SigningKey, network: string, use: Partial<Parameters<typeof checkToken>[1]> = {}): Promise<void> {
  const deploy = { command: 'deploy', host: H.publicKey, cpuCores: 1, memMb: 64, durationSecs: 60, bid: 10n ** 17n, image: 'localhost/busybox:test' };
  return checkToken(token, { ...deploy, ...use }, { network, roots: [H.publicKey], presenter: holder.publicKey, nowSecs: now(), revoked: () => false });
}

test("mesh cap issue signs a root link with the data directory's key, each option a bound, for the main network or --devnet", async () => {
  const before = now();
  const token = await issue(H, [
    '--to',
    id(A),
    '--allow',
    'deploy,kill',
    '--cpu',
    '4',
    '--mem-mb',
    '1024',
    '--duration-secs',
    '3600',
    '--max-bid',
    '1.5',
    '--image',
    'localhost/',
    '--image',
    'docker.io/library/',
    '--node',
    id(H),
    '--expires',
    '2h',
  ]);
  assert.equal(token.length, 1);
  const [link] = token as [Token[number]];
  assert.deepEqual(link.issuer, H.publicKey);
  assert.deepEqual(link.audience, A.publicKey);
  assert.deepEqual(link.allows, {
    commands: ['kill', 'deploy'],
    cpu_cores: 4,
    mem_mb: 1024,
    duration_secs: 3600,
    bid: 15n * 10n ** 17n,
    images: ['localhost/', 'docker.io/library/'],
    nodes: [H.publicKey],
  });
  assert.ok(link.not_before >= before && link.not_before <= now());
  assert.equal(link.expiry - link.not_before, 7200);
  await check(token, A, MAINNET.network);
  await assert.rejects(check(token, A, DEVNET), (e: unknown) => e instanceof CapabilityError && e.code === 'bad-signature');
  // --devnet signs for the devnet; no bound given is no bound; the default window is a day.
  const open = await issue(H, ['--to', id(A), '--allow', 'kill', '--devnet']);
  assert.deepEqual(open[0]!.allows, { commands: ['kill'], cpu_cores: null, mem_mb: null, duration_secs: null, bid: null, images: null, nodes: null });
  assert.equal(open[0]!.expiry - open[0]!.not_before, 86_400);
  await check(open, A, DEVNET, { command: 'kill' });
  // Moments as unix seconds or ISO 8601.
  const fixed = await issue(H, ['--to', id(A), '--allow', 'deploy', '--not-before', '2030-01-01T00:00:00Z', '--expires', '1893456000']);
  assert.equal(fixed[0]!.not_before, Date.UTC(2030, 0, 1) / 1000);
  assert.equal(fixed[0]!.expiry, 1_893_456_000);
  // The same terms twice are two links (fresh nonces).
  const again = await issue(H, ['--to', id(A), '--allow', 'kill', '--devnet']);
  assert.notEqual(toHex(linkId(DEVNET, again[0]!)), toHex(linkId(DEVNET, open[0]!)));
});

test('mesh cap issue refuses bad values with exit 2, and a data directory without an identity with exit 1', async () => {
  const bad: [string[], RegExp][] = [
    [['--to', 'abc', '--allow', 'deploy'], /--to must be a node id/],
    [['--to', id(A), '--allow', 'exec'], /--allow takes commands from deploy, kill/],
    [['--to', id(A)], /--allow/],
    [['--to', id(A), '--allow', 'deploy', '--cpu', '0'], /--cpu takes an integer from 1 to 1024/],
    [['--to', id(A), '--allow', 'deploy', '--max-bid', '-1'], /sign/],
    [['--to', id(A), '--allow', 'deploy', '--image', 'a b'], /--image takes an image reference prefix/],
    [['--to', id(A), '--allow', 'deploy', '--expires', 'soon'], /--expires takes a duration/],
    [['--to', id(A), '--allow', 'deploy', '--expires', '0h'], /above 0/],
    [['--to', id(A), '--allow', 'deploy', '--not-before', 'tomorrow'], /--not-before takes unix seconds or an ISO 8601/],
    [['--to', id(A), '--allow', 'deploy', '--not-before', '2030-01-01T00:00:00Z', '--expires', '2029-01-01T00:00:00Z'], /is before the link becomes valid/],
    [['--to', id(A), '--allow', 'deploy', ...Array.from({ length: 17 }, (_, i) => ['--image', `p${i}/`]).flat()], /--image may be given at most 16 times/],
  ];
  for (const [args, message] of bad) {
    const r = await cap(['issue', ...args, ...dataDir(H)]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.err, message, args.join(' '));
    assert.equal(r.out, '');
  }
  const empty = await mkdtemp(join(root, 'none-'));
  const r = await cap(['issue', '--to', id(A), '--allow', 'deploy', '--data-dir', empty]);
  assert.equal(r.code, 1);
  assert.match(r.err, /has no identity \(no identity\.json\); start mesh node there once/);
});

test("mesh cap delegate appends a narrowing link signed by the holder; options left out keep the parent's bounds", async () => {
  const token = await issue(H, ['--to', id(A), '--allow', 'deploy,kill', '--cpu', '4', '--max-bid', '2', '--image', 'localhost/', '--expires', '2h']);
  const r = await cap(['delegate', encodeToken(token), '--to', id(B), '--cpu', '2', '--image', 'localhost/busybox', '--expires', '1h', ...dataDir(A)]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /^signed link [0-9a-f]{64} on mesh: .* may kill, deploy until /);
  const longer = decodeToken(r.out.trim());
  assert.equal(longer.length, 2);
  assert.deepEqual(longer[0], token[0]);
  const child = longer[1]!;
  assert.deepEqual(child.issuer, A.publicKey);
  assert.deepEqual(child.audience, B.publicKey);
  assert.deepEqual(child.allows, { ...token[0]!.allows, cpu_cores: 2, images: ['localhost/busybox'] });
  assert.equal(child.expiry - child.not_before, 3600);
  await check(longer, B, MAINNET.network, { cpuCores: 2 });
  await assert.rejects(check(longer, B, MAINNET.network, { cpuCores: 3 }), (e: unknown) => e instanceof CapabilityError && e.code === 'not-allowed');
  // Without --expires the new link ends with the token.
  const same = decodeToken((await cap(['delegate', r.out.trim(), '--to', id(C), '--allow', 'kill', ...dataDir(B)])).out.trim());
  assert.equal(same[2]!.expiry, child.expiry);
  assert.deepEqual(same[2]!.allows.commands, ['kill']);
});

test('mesh cap delegate refuses, exit 1, when this key does not hold the token, when the link would widen, or the token is broken or full', async () => {
  const token = encodeToken(await issue(H, ['--to', id(A), '--allow', 'deploy', '--cpu', '4', '--image', 'localhost/']));
  const cases: [string[], SigningKey, RegExp][] = [
    [[], B, /the token is held by .*, not by this data directory's key .*: only its holder can delegate it/],
    [['--cpu', '8'], A, /the new link would widen the token: its cpu_cores ≤ 8 is above its parent's 4/],
    [['--allow', 'deploy,kill'], A, /widen the token: it grants the command "kill"/],
    [['--image', 'docker.io/'], A, /image entry "docker.io\/" is not within any of its parent.s/],
    [['--devnet'], A, /the token does not hold together on mesh-devnet: the signature of link 0 does not verify/],
  ];
  for (const [args, key, message] of cases) {
    const r = await cap(['delegate', token, '--to', id(B), ...args, ...dataDir(key)]);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, message);
    assert.equal(r.out, '');
  }
  // A token of MAX_LINKS links cannot take another: A → A → … keeps A the holder.
  let full = token;
  for (let i = 1; i < MAX_LINKS; i++) full = (await cap(['delegate', full, '--to', id(A), ...dataDir(A)])).out.trim();
  assert.equal(decodeToken(full).length, MAX_LINKS);
  const r = await cap(['delegate', full, '--to', id(B), ...dataDir(A)]);
  assert.equal(r.code, 1);
  assert.match(r.err, /has 8 links already, the most a token may have/);
  const notToken = await cap(['delegate', 'mcap1.AAAA', '--to', id(B), ...dataDir(A)]);
  assert.equal(notToken.code, 2);
  assert.match(notToken.err, /<token> is not a capability token/);
});

test('mesh cap inspect shows every link, the effect and the verdict, as text or JSON; exit 1 when the chain does not hold', async () => {
  const first = await issue(H, ['--to', id(A), '--allow', 'deploy,kill', '--cpu', '4', '--max-bid', '1.5', '--expires', '1h']);
  const text = (await cap(['delegate', encodeToken(first), '--to', id(B), '--allow', 'deploy', ...dataDir(A)])).out.trim();
  const token = decodeToken(text);
  const human = await cap(['inspect', text]);
  assert.equal(human.code, 0, human.err);
  assert.match(human.out, /^link 0 \(root\)\n {2}issuer {4}[0-9a-f]{64}\n/);
  assert.match(
    human.out,
    new RegExp(
      `link 1\\n {2}issuer {4}${id(A)}\\n {2}audience {2}${id(B)}\\n {2}commands {2}deploy\\n {2}cpu ≤ 4 cores, memory any, duration any, bid ≤ 1.5 credits\\n`,
    ),
  );
  assert.ok(human.out.includes(`link id   ${toHex(linkId(MAINNET.network, token[1]!))}`));
  assert.match(human.out, /effective\n {2}holder {4}[0-9a-f]{64}\n {2}commands {2}deploy\n/);
  assert.match(human.out, /chain {5}holds together on mesh: aligned, signed, each link narrowing its parent\n$/);
  const json = await cap(['inspect', text, '--json']);
  const parsed = JSON.parse(json.out) as {
    links: { link_id: string; allows: { bid: string } }[];
    effective: { allows: { commands: string[] }; expiry: number };
    valid: boolean;
    problem: null;
  };
  assert.equal(parsed.links.length, 2);
  assert.equal(parsed.links[0]!.link_id, toHex(linkId(MAINNET.network, token[0]!)));
  assert.equal(parsed.links[0]!.allows.bid, '1500000000000000000');
  assert.deepEqual(parsed.effective.allows.commands, ['deploy']);
  assert.equal(parsed.effective.expiry, token[0]!.expiry);
  assert.equal(parsed.valid, true);
  const wrong = await cap(['inspect', text, '--devnet']);
  assert.equal(wrong.code, 1);
  assert.match(wrong.out, /chain {5}INVALID on mesh-devnet: bad-signature: the signature of link 0 does not verify/);
});

/** The devnet node of the revoke and trust tests, mining, with its data directory. */
let node: MeshProcess | undefined;
async function devnetNode(): Promise<MeshProcess> {
  node ??= await startNode({ mine: true, blockIntervalMs: 200 });
  return node;
}

interface TxRow {
  readonly tx_id: string;
  readonly kind: string;
}

async function mined(n: MeshProcess, txId: string): Promise<TxRow> {
  return waitFor(`transaction ${txId} in a block`, async () => (await getJson<TxRow[]>(n, `/transactions/${n.nodeId}`)).find((t) => t.tx_id === txId), 30_000);
}

test('mesh cap revoke: the running node revokes the link it issued; once mined, revoking again is a conflict', async () => {
  const n = await devnetNode();
  const nodeKeyDir = ['--data-dir', n.dataDir];
  // The node's own key issues: its data directory holds it.
  const issued = await cap(['issue', '--to', id(A), '--allow', 'deploy', '--devnet', ...nodeKeyDir]);
  assert.equal(issued.code, 0, issued.err);
  const token = decodeToken(issued.out.trim());
  const delegated = (await cap(['delegate', issued.out.trim(), '--to', id(B), '--devnet', ...dataDir(A)])).out.trim();
  const r = await cap(['revoke', delegated, ...nodeKeyDir]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, new RegExp(`^revoking link ${toHex(linkId(DEVNET, token[0]!))}: in effect once the transaction is in a block`));
  const row = await mined(n, r.out.trim());
  assert.equal(row.kind, 'RevokeCapability');
  const again = await cap(['revoke', delegated, ...nodeKeyDir]);
  assert.equal(again.code, 1);
  assert.match(again.err, /^mesh cap revoke: Capability already revoked \(409\): link 0 \(id [0-9a-f]{64}\) was revoked at height \d+/);
  // A token this node issued nothing of.
  const other = (await cap(['issue', '--to', id(B), '--allow', 'kill', '--devnet', ...dataDir(A)])).out.trim();
  const none = await cap(['revoke', other, ...nodeKeyDir, '--json']);
  assert.equal(none.code, 1);
  assert.match(none.err, /Invalid request body \(400\): no link of the token was issued by this node/);
  const json = await cap([
    'revoke',
    (await cap(['issue', '--to', id(A), '--allow', 'kill', '--devnet', ...nodeKeyDir])).out.trim(),
    '--link',
    '0',
    '--json',
    ...nodeKeyDir,
  ]);
  assert.equal(json.code, 0, json.err);
  assert.deepEqual(Object.keys(JSON.parse(json.out) as object), ['token_id', 'tx_id']);
});

test("mesh trust grants and withdraws the running node's admin trust; asking for what is already so is a conflict", async () => {
  const n = await devnetNode();
  const trust = (args: string[]): Promise<Run> => run(trustCommand, 'mesh trust', [...args, '--data-dir', n.dataDir]);
  const granted = await trust([id(C)]);
  assert.equal(granted.code, 0, granted.err);
  assert.match(granted.err, new RegExp(`^granting admin trust to ${id(C)}: in effect once the transaction is in a block`));
  const twice = await trust([id(C)]);
  assert.equal(twice.code, 1);
  assert.match(twice.err, /Trust already in that state \(409\)/);
  assert.equal((await mined(n, granted.out.trim())).kind, 'TrustGrant');
  const withdrawn = await trust(['--withdraw', id(C)]);
  assert.equal(withdrawn.code, 0, withdrawn.err);
  assert.match(withdrawn.err, /^withdrawing admin trust from/);
  await mined(n, withdrawn.out.trim());
  const gone = await trust(['--withdraw', id(C)]);
  assert.equal(gone.code, 1);
  assert.match(gone.err, /does not trust/);
  const self = await trust([n.nodeId]);
  assert.equal(self.code, 1);
  assert.match(self.err, /cannot grant admin trust to itself/);
  const bad = await trust(['xyz']);
  assert.equal(bad.code, 2);
});
