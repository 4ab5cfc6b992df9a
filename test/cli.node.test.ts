import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const mesh = new URL('../bin/mesh.js', import.meta.url).pathname;

async function runMesh(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [mesh, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

test('mesh help lists every command', async () => {
  const { code, stdout } = await runMesh(['help']);
  assert.equal(code, 0);
  for (const command of ['node', 'status', 'send', 'jobs', 'directory', 'bench', 'identity']) assert.match(stdout, new RegExp(`^  ${command}\\b`, 'm'));
});

test('a closed pipe ends mesh quietly with exit 0, as `mesh help | head -0` would', async () => {
  // The reading end is closed before the command writes: its first write meets EPIPE.
  const child = spawn(process.execPath, [mesh, 'help'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(stderr, '');
  assert.equal(code, 0);
});

test('mesh --version prints the version in package.json', async () => {
  const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.deepEqual(await runMesh(['--version']), { code: 0, stdout: `mesh ${version}\n`, stderr: '' });
});

test('mesh linked onto the PATH (npm link) runs under the Node that npm ci installed, with no node on the PATH', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-link-'));
  try {
    // The PATH holds only what bin/mesh itself calls: no node of any version.
    const tools = join(dir, 'tools');
    await mkdir(tools);
    for (const tool of ['dirname', 'readlink']) {
      const { stdout } = await run('sh', ['-c', `command -v ${tool}`]);
      await symlink(stdout.trim(), join(tools, tool));
    }
    await symlink(fileURLToPath(new URL('../bin/mesh', import.meta.url)), join(dir, 'mesh'));
    const { stdout, stderr } = await run(join(dir, 'mesh'), ['--version'], { env: { PATH: tools, HOME: dir } });
    assert.match(stdout, /^mesh \d+\.\d+\.\d+\n$/);
    assert.equal(stderr, '', 'no warning of any kind');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("package.json's engines admit Node 20, which the README lets run npm: npm warns on every npx call otherwise", async () => {
  const { engines } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
  const least = /^>=(\d+)(?:\.\d+)*$/.exec(engines.node);
  assert.ok(least !== null && Number(least[1]) <= 20, engines.node);
});

test('mesh --help and mesh status load no libp2p module: every command loads its own modules only when it runs', async () => {
  // A loader hook that lists every module the process loads, on stderr as it exits.
  const hook = `data:text/javascript,${encodeURIComponent(
    "import { registerHooks } from 'node:module'; const seen = []; registerHooks({ load(url, context, next) { seen.push(url); return next(url, context); } }); process.on('exit', () => console.error(seen.join(' ')));",
  )}`;
  for (const args of [['--help'], ['status', '--node', 'http://127.0.0.1:9']]) {
    const loaded = await new Promise<string>((resolve) => {
      execFile(process.execPath, ['--import', hook, mesh, ...args], { timeout: 60_000 }, (_error, _stdout, stderr) => resolve(stderr));
    });
    assert.match(loaded, /host-node\/cli\.ts/, 'the hook saw the modules');
    assert.doesNotMatch(loaded, /node_modules\/(libp2p|@libp2p|@chainsafe|classic-level|dockerode)\//, args.join(' '));
  }
});

test('mesh with no command prints usage and exits 2', async () => {
  const { code, stderr } = await runMesh([]);
  assert.equal(code, 2);
  assert.match(stderr, /^Usage: mesh <command>/m);
});

test('mesh node --help prints its options; a bad option is a usage error', async () => {
  const { code, stdout } = await runMesh(['node', '--help']);
  assert.equal(code, 0);
  for (const option of [
    '--data-dir',
    '--host',
    '--port',
    '--p2p-port',
    '--listen-host',
    '--bootstrap',
    '--mdns',
    '--no-mdns',
    '--upnp',
    '--max-connections',
    '--max-connections-per-ip',
    '--mine',
    '--devnet',
    '--block-interval-ms',
    '--announce',
    '--stun',
    '--stun-port',
  ]) {
    assert.ok(stdout.includes(option), option);
  }
  for (const bad of [
    ['--frob'],
    ['--port', '70000'],
    ['--block-interval-ms', '50'],
    ['--devnet', '--block-interval-ms', '5'],
    ['--bootstrap', '/ip4/127.0.0.1/tcp/1'],
    ['--p2p-port', '65535'],
    ['--host', ''],
    ['--data-dir', ''],
    ['--announce', 'not-a-multiaddr'],
    ['--announce', '/ip4/127.0.0.1/tcp/1/p2p/12D3KooWLRPJAA5o6X4SyBCe9GYuBQm4FUkRHJuPAmjFCjQbAjTf'],
    ['--listen-host', 'localhost'],
    ['--listen-host', ''],
    ['--mdns', '--no-mdns'],
    ['--max-connections', '0'],
    ['--max-connections-per-ip', 'many'],
    ['--bootstrap', '/dnsaddr/'],
    ['--stun', '198.18.0.10:3478'],
    ['--stun', 'turn:198.18.0.10:3478'],
    ['--stun', 'stun:198.18.0.10:70000'],
    ['--stun-port', '70000'],
  ]) {
    const refused = await runMesh(['node', ...bad]);
    assert.equal(refused.code, 2, bad.join(' '));
    assert.match(refused.stderr, /^mesh node: /, bad.join(' '));
  }
});

test('an unknown command is refused with exit 2', async () => {
  const { code, stderr } = await runMesh(['frobnicate']);
  assert.equal(code, 2);
  assert.match(stderr, /unknown command "frobnicate"/);
});

test('mesh node that cannot start says why in one line and exits 1', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  const dataDir = await mkdtemp(join(tmpdir(), 'mesh-cli-'));
  try {
    const { code, stdout, stderr } = await runMesh(['node', '--devnet', '--data-dir', dataDir, '--p2p-port', '0', '--port', String(port)]);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.match(stderr, new RegExp(`^mesh node: cannot serve the HTTP API on 127\\.0\\.0\\.1 port ${port}: .*EADDRINUSE`));
    assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  } finally {
    await new Promise((resolve) => taken.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  }
});
