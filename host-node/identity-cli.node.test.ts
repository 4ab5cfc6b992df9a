import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { openDataDir } from './data-dir.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const nodeBin = join(repo, 'node_modules/.bin/node');
const root = await mkdtemp(join(tmpdir(), 'mesh-identity-'));
after(() => rm(root, { recursive: true, force: true }));

let counter = 0;
const fresh = (): string => join(root, `t${counter++}`);
const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;
const quiet = (): void => {};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `mesh identity ARGS` as a real process, with HOME pointing at `home` and `input` on its standard input. */
function mesh(args: string[], home = root, input = ''): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(nodeBin, ['bin/mesh.js', 'identity', ...args], { cwd: repo, env: { ...process.env, HOME: home } }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

// The backups' passphrase, in a file as a script would give it.
const PASS = 'tidal basin marmalade';
const passFile = join(root, 'pass.txt');
await writeFile(passFile, `${PASS}\n`);
const sealed = ['--passphrase-file', passFile];

/** A data directory with an identity, made as `mesh node` would; returns its node_id. */
async function nodeDir(dir: string): Promise<string> {
  return toHex((await openDataDir(dir, { warn: quiet })).identity.publicKey);
}

test('backup then restore into a fresh data dir gives the same node_id, files 0600', async () => {
  const base = fresh();
  const from = join(base, 'a');
  const nodeId = await nodeDir(from);
  const out = join(base, 'backup.json');

  const backup = await mesh(['backup', '--out', out, '--data-dir', from, ...sealed]);
  assert.equal(backup.code, 0, backup.stderr);
  assert.ok(backup.stdout.includes(nodeId), backup.stdout);
  assert.equal(await modeOf(out), 0o600);

  const to = join(base, 'b', 'mesh');
  const restore = await mesh(['restore', '--in', out, '--data-dir', to, ...sealed]);
  assert.equal(restore.code, 0, restore.stderr);
  assert.ok(restore.stdout.includes(nodeId), restore.stdout);
  assert.equal(await modeOf(join(to, 'identity.json')), 0o600);
  assert.equal(await modeOf(to), 0o700);
  assert.deepEqual(await readdir(to), ['identity.json']);
  // The node started on the restored directory is the same node.
  assert.equal(await nodeDir(to), nodeId);

  const again = await mesh(['restore', '--in', out, '--data-dir', to, ...sealed]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /already installed/);
});

test('the default data dir is ~/.mesh', async () => {
  const home = fresh();
  const nodeId = await nodeDir(join(home, '.mesh'));
  const out = join(home, 'key.json');
  const backup = await mesh(['backup', '--out', out, ...sealed], home);
  assert.equal(backup.code, 0, backup.stderr);
  assert.equal(JSON.parse(await readFile(out, 'utf8')).node_id, nodeId);
});

test('the backup is sealed: no seed in the file, a wrong passphrase is refused and changes nothing', async () => {
  const base = fresh();
  const from = join(base, 'a');
  const nodeId = await nodeDir(from);
  const seed = JSON.parse(await readFile(join(from, 'identity.json'), 'utf8')).seed as string;
  const out = join(base, 'backup.json');
  assert.equal((await mesh(['backup', '--out', out, '--data-dir', from, ...sealed])).code, 0);
  const text = await readFile(out, 'utf8');
  assert.equal(JSON.parse(text).version, 2);
  assert.equal(JSON.parse(text).node_id, nodeId, 'which key a backup holds stays readable');
  assert.ok(!text.includes(seed), 'the seed is not in the file');

  const to = join(base, 'b');
  const wrong = await mesh(['restore', '--in', out, '--data-dir', to, '--passphrase-file', '-'], root, 'tidal basin marmalades\n');
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /passphrase does not open this backup/);
  assert.doesNotMatch(wrong.stderr, /\n\s+at /, 'one line, no stack');
  await assert.rejects(stat(to), 'nothing is created');
  // Standard input as the passphrase file.
  const right = await mesh(['restore', '--in', out, '--data-dir', to, '--passphrase-file', '-'], root, `${PASS}\n`);
  assert.equal(right.code, 0, right.stderr);
  assert.equal(await nodeDir(to), nodeId);
});

test('without a terminal or a passphrase file the backup is refused; --unencrypted writes it in the clear with a warning', async () => {
  const base = fresh();
  const dir = join(base, 'node');
  const nodeId = await nodeDir(dir);
  const out = join(base, 'backup.json');
  const refused = await mesh(['backup', '--out', out, '--data-dir', dir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /needs a passphrase.*--passphrase-file/);
  await assert.rejects(stat(out));
  const short = join(base, 'short.txt');
  await writeFile(short, 'abc\n');
  const weak = await mesh(['backup', '--out', out, '--data-dir', dir, '--passphrase-file', short]);
  assert.equal(weak.code, 1);
  assert.match(weak.stderr, /at least 8 characters/);
  await assert.rejects(stat(out));

  const clear = await mesh(['backup', '--out', out, '--data-dir', dir, '--unencrypted']);
  assert.equal(clear.code, 0, clear.stderr);
  assert.match(clear.stderr, /WARNING: .*in the clear/);
  assert.equal(JSON.parse(await readFile(out, 'utf8')).version, 1);
  assert.equal(await modeOf(out), 0o600);
  // A clear backup restores without a passphrase.
  const to = join(base, 'b');
  const restored = await mesh(['restore', '--in', out, '--data-dir', to]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal(await nodeDir(to), nodeId);
});

test('backup refuses to overwrite a file unless --force, and needs an identity', async () => {
  const base = fresh();
  const dir = join(base, 'node');
  const nodeId = await nodeDir(dir);
  const out = join(base, 'existing.json');
  await writeFile(out, 'keep me');

  const refused = await mesh(['backup', '--out', out, '--data-dir', dir, ...sealed]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /already exists.*--force/);
  assert.equal(await readFile(out, 'utf8'), 'keep me');

  const forced = await mesh(['backup', '--out', out, '--data-dir', dir, '--force', ...sealed]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(JSON.parse(await readFile(out, 'utf8')).node_id, nodeId);
  assert.equal(await modeOf(out), 0o600);
  assert.deepEqual((await readdir(base)).sort(), ['existing.json', 'node']);

  const empty = join(base, 'empty');
  await mkdir(empty);
  const none = await mesh(['backup', '--out', join(base, 'x.json'), '--data-dir', empty, ...sealed]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /has no identity/);
  await assert.rejects(stat(join(base, 'x.json')));
});

test('restore refuses a different identity without --force, naming both, and replaces it with --force', async () => {
  const base = fresh();
  const dir = join(base, 'node');
  const current = await nodeDir(dir);
  const other = SigningKey.generate();
  const otherId = toHex(other.publicKey);
  const file = join(base, 'other.json');
  await writeFile(file, JSON.stringify({ type: 'mesh-identity', version: 1, node_id: otherId, seed: toHex(other.exportSeed()) }));
  const before = await readFile(join(dir, 'identity.json'), 'utf8');

  const refused = await mesh(['restore', '--in', file, '--data-dir', dir]);
  assert.equal(refused.code, 1);
  assert.ok(refused.stderr.includes(current) && refused.stderr.includes(otherId), refused.stderr);
  assert.equal(await readFile(join(dir, 'identity.json'), 'utf8'), before);

  const forced = await mesh(['restore', '--in', file, '--data-dir', dir, '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(await nodeDir(dir), otherId);
  assert.equal(await modeOf(join(dir, 'identity.json')), 0o600);
  assert.deepEqual((await readdir(dir)).sort(), ['api.token', 'identity.json']);
});

test('restore refuses a tampered or corrupt file and changes nothing', async () => {
  const base = fresh();
  const dir = join(base, 'node');
  await nodeDir(dir);
  const before = await readFile(join(dir, 'identity.json'), 'utf8');
  const good = JSON.parse(before) as Record<string, unknown>;
  const fresher = join(base, 'fresh');
  const bad: Record<string, string> = {
    'wrong node_id': JSON.stringify({ ...good, node_id: toHex(SigningKey.generate().publicKey) }),
    'bad hex': JSON.stringify({ ...good, seed: `${(good.seed as string).slice(0, 62)}zz` }),
    'short seed': JSON.stringify({ ...good, seed: (good.seed as string).slice(0, 62) }),
    'wrong type': JSON.stringify({ ...good, type: 'other' }),
    'wrong version': JSON.stringify({ ...good, version: '1' }),
    'not json': 'seed=00',
  };
  for (const [what, text] of Object.entries(bad)) {
    const file = join(base, 'bad.json');
    await writeFile(file, text);
    for (const target of [dir, fresher]) {
      const run = await mesh(['restore', '--in', file, '--data-dir', target, '--force']);
      assert.equal(run.code, 1, `${what}: ${run.stdout}`);
      assert.match(run.stderr, /not a valid mesh identity/, what);
    }
    assert.equal(await readFile(join(dir, 'identity.json'), 'utf8'), before, what);
    await assert.rejects(stat(fresher), `${what}: nothing is created`);
  }
  const missing = await mesh(['restore', '--in', join(base, 'nope.json'), '--data-dir', dir]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no identity file at/);
});

test('usage errors exit 2 with a usage line', async () => {
  const cases = [
    [],
    ['rotate'],
    ['backup'],
    ['backup', '--out'],
    ['backup', '--out', 'x.json', '--bogus'],
    ['backup', '--in', 'x.json'],
    ['restore', '--out', 'x.json'],
    ['restore', '--in', 'x.json', 'extra'],
    ['restore', '--in', 'x.json', '--data-dir'],
  ];
  for (const args of cases) {
    const run = await mesh(args);
    assert.equal(run.code, 2, args.join(' '));
    assert.match(run.stderr, /^Usage: mesh identity /m, args.join(' '));
  }
  const help = await mesh(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: mesh identity/);
});
