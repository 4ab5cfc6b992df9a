import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SigningKey } from '../core/crypto/ed25519.ts';
import { toHex } from '../core/encoding/hex.ts';
import { DataDirError, openDataDir, readApiAddress, readIdentityFile, readNodeId, removeApiAddress, writeApiAddress, writeIdentityFile } from './data-dir.ts';

const root = await mkdtemp(join(tmpdir(), 'mesh-datadir-'));
after(() => rm(root, { recursive: true, force: true }));

let counter = 0;
const freshDir = (): string => join(root, `d${counter++}`, 'mesh');
const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;
const noWarnings = (line: string): void => assert.fail(`unexpected warning: ${line}`);

test('first start creates the directory 0700, a 64-hex token 0600 and an identity 0600', async () => {
  const dir = freshDir();
  const data = await openDataDir(dir, { warn: noWarnings });
  assert.equal(data.created, true);
  assert.equal(data.dir, dir);
  assert.equal(data.chainPath, join(dir, 'chain'));
  assert.match(data.token, /^[0-9a-f]{64}$/);
  assert.equal(await readFile(join(dir, 'api.token'), 'utf8'), data.token);
  assert.equal(await modeOf(dir), 0o700);
  assert.equal(await modeOf(join(dir, 'api.token')), 0o600);
  assert.equal(await modeOf(join(dir, 'identity.json')), 0o600);
  // No temporary files are left behind.
  assert.deepEqual((await readdir(dir)).sort(), ['api.token', 'identity.json']);

  const file = JSON.parse(await readFile(join(dir, 'identity.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(file).sort(), ['node_id', 'seed', 'type', 'version']);
  assert.equal(file.type, 'mesh-identity');
  assert.equal(file.version, 1);
  assert.equal(file.node_id, toHex(data.identity.publicKey));
  assert.equal(file.seed, toHex(data.identity.exportSeed()));
});

test('token and identity are stable across opens', async () => {
  const dir = freshDir();
  const first = await openDataDir(dir, { warn: noWarnings });
  const second = await openDataDir(dir, { warn: noWarnings });
  assert.equal(second.created, false);
  assert.equal(second.token, first.token);
  assert.equal(toHex(second.identity.publicKey), toHex(first.identity.publicKey));
});

test('starts racing on a fresh directory all end with the same token and identity', async () => {
  const dir = freshDir();
  const opened = await Promise.all(Array.from({ length: 8 }, () => openDataDir(dir, { warn: noWarnings })));
  assert.equal(new Set(opened.map((d) => d.token)).size, 1);
  assert.equal(new Set(opened.map((d) => toHex(d.identity.publicKey))).size, 1);
  assert.equal(opened.filter((d) => d.created).length, 1);
  assert.deepEqual((await readdir(dir)).sort(), ['api.token', 'identity.json']);
});

test('a token someone wrote is read trimmed; a loose mode is tightened to 0600 with a warning', async () => {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'api.token'), '  my-own-token\n', { mode: 0o644 });
  await chmod(join(dir, 'api.token'), 0o644);
  const warnings: string[] = [];
  const data = await openDataDir(dir, { warn: (line) => warnings.push(line) });
  assert.equal(data.token, 'my-own-token');
  assert.equal(await modeOf(join(dir, 'api.token')), 0o600);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /api\.token had mode 0644.*0600/);
  await openDataDir(dir, { warn: noWarnings });

  // The identity holds the secret seed: the same rule applies to it.
  await chmod(join(dir, 'identity.json'), 0o640);
  const later: string[] = [];
  await openDataDir(dir, { warn: (line) => later.push(line) });
  assert.equal(await modeOf(join(dir, 'identity.json')), 0o600);
  assert.match(later.join('\n'), /identity\.json had mode 0640/);
});

test('an empty or unreadable token is refused clearly', async () => {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'api.token'), ' \n', { mode: 0o600 });
  await assert.rejects(openDataDir(dir), (error: unknown) => {
    assert.ok(error instanceof DataDirError);
    assert.equal(error.code, 'token-empty');
    assert.ok(error.message.includes(join(dir, 'api.token')));
    return true;
  });

  const other = freshDir();
  await mkdir(join(other, 'api.token'), { recursive: true }); // a directory cannot be read as a file
  await assert.rejects(openDataDir(other), { name: 'DataDirError', code: 'token-unreadable' });
});

test('a corrupt identity is refused and left as it was', async () => {
  const dir = freshDir();
  const data = await openDataDir(dir, { warn: noWarnings });
  const path = join(dir, 'identity.json');
  const good = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const other = toHex(SigningKey.generate().publicKey);
  const corruptions: [string, string][] = [
    ['identity-json', '{"type": "mesh-identity", '],
    ['identity-json', '[]'],
    ['identity-type', JSON.stringify({ ...good, type: 'ssh-key' })],
    ['identity-version', JSON.stringify({ ...good, version: 2 })],
    ['identity-hex', JSON.stringify({ ...good, seed: (good.seed as string).slice(2) })],
    ['identity-hex', JSON.stringify({ ...good, seed: (good.seed as string).toUpperCase() })],
    ['identity-hex', JSON.stringify({ ...good, node_id: 42 })],
    ['identity-mismatch', JSON.stringify({ ...good, node_id: other })],
  ];
  for (const [code, text] of corruptions) {
    await writeFile(path, text, { mode: 0o600 });
    await assert.rejects(openDataDir(dir, { warn: noWarnings }), (error: unknown) => {
      assert.ok(error instanceof DataDirError, String(error));
      assert.equal(error.code, code, text);
      assert.ok(error.message.includes(path), error.message);
      return true;
    });
    assert.equal(await readFile(path, 'utf8'), text);
  }
  await writeFile(path, JSON.stringify(good), { mode: 0o600 });
  assert.equal(toHex((await openDataDir(dir, { warn: noWarnings })).identity.publicKey), toHex(data.identity.publicKey));
});

test('writeIdentityFile refuses an existing file unless forced; readIdentityFile reads it back', async () => {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  const path = join(dir, 'backup.json');
  const a = SigningKey.generate();
  const b = SigningKey.generate();
  await writeIdentityFile(path, a);
  await assert.rejects(writeIdentityFile(path, b), { name: 'DataDirError', code: 'identity-exists' });
  assert.equal(toHex((await readIdentityFile(path)).publicKey), toHex(a.publicKey));
  await writeIdentityFile(path, b, { force: true });
  assert.equal(toHex((await readIdentityFile(path)).publicKey), toHex(b.publicKey));
  assert.equal(await modeOf(path), 0o600);
  assert.deepEqual(await readdir(dir), ['backup.json']);
  await assert.rejects(readIdentityFile(join(dir, 'missing.json')), { name: 'DataDirError', code: 'identity-missing' });
});

test("removeApiAddress removes this node's own record and leaves one another node wrote", async () => {
  const dir = freshDir();
  await mkdir(dir, { recursive: true });
  await writeApiAddress(dir, 'http://127.0.0.1:8844');
  await removeApiAddress(dir, 'http://127.0.0.1:8844');
  assert.equal(await readApiAddress(dir), null);
  assert.deepEqual(await readdir(dir), []);
  // Another node on this data directory, even one that got this pid (another pid namespace), wrote its own record.
  await writeApiAddress(dir, 'http://127.0.0.1:9000');
  await removeApiAddress(dir, 'http://127.0.0.1:8844');
  assert.deepEqual(await readApiAddress(dir), { url: 'http://127.0.0.1:9000', pid: process.pid });
  assert.deepEqual(await readdir(dir), ['api.json']);
  await removeApiAddress(dir, 'http://127.0.0.1:8844'); // none: nothing happens
});

test('readNodeId reads the node id an identity states, and refuses a file that states none', async () => {
  const dir = freshDir();
  const data = await openDataDir(dir, { warn: noWarnings });
  assert.equal(await readNodeId(dir), toHex(data.identity.publicKey));
  await writeFile(join(dir, 'identity.json'), '{"node_id": "AB"}');
  await assert.rejects(readNodeId(dir), DataDirError);
  await assert.rejects(readNodeId(freshDir()), /cannot read the node id/);
});
