/**
 * The bootstrap list: the data directory's file (comments, bad lines named), and /dnsaddr names
 * resolved through TXT records, with a lookup stub in place of DNS.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert } from 'chai';
import { SigningKey } from '../core/crypto/ed25519.ts';
import type { Libp2pNetwork } from '../core/net/libp2p-network.ts';
import { test } from '../test/harness.ts';
import { BOOTSTRAP_FILE, BootstrapFileError, parseBootstrapFile, readBootstrapFile, resolveBootstrap, type TxtLookup } from './bootstrap-list.ts';
import { startP2PNetwork } from './p2p.ts';

const A = '12D3KooWLRPJAA5o6X4SyBCe9GYuBQm4FUkRHJuPAmjFCjQbAjTf';
const B = '12D3KooWLTJDxV8VTfhGLQ4qmRw9E3BqFAZuh3vKXCWf5vKwkMSd';
// An RSA peer id: not a mesh node.
const RSA = 'QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN';

/** A TXT lookup from a table of names; a name not in it fails as DNS would. */
function txt(records: Record<string, string[]>): TxtLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (name: string): Promise<string[][]> => {
    asked.push(name);
    const found = records[name];
    if (found === undefined) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    // Long records arrive split into strings of at most 255 bytes: they are joined.
    return found.map((r) => [r.slice(0, 20), r.slice(20)]);
  };
  return Object.assign(lookup, { asked });
}

test('bootstrap file: one multiaddr a line, # comments and blank lines skipped', () => {
  const text = [
    '# the mesh bootstrap nodes',
    '',
    `/ip4/198.18.0.1/tcp/8845/p2p/${A}`,
    `   /dns4/boot.example.org/tcp/8845/p2p/${B}   # a name`,
    '/dnsaddr/bootstrap.example.org',
    `/dnsaddr/bootstrap.example.org/p2p/${A}`,
    '',
  ].join('\n');
  assert.deepEqual(parseBootstrapFile(text, '/d/bootstrap'), [
    `/ip4/198.18.0.1/tcp/8845/p2p/${A}`,
    `/dns4/boot.example.org/tcp/8845/p2p/${B}`,
    '/dnsaddr/bootstrap.example.org',
    `/dnsaddr/bootstrap.example.org/p2p/${A}`,
  ]);
});

test('bootstrap file: a bad line is named by the file and its number, with what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['/ip4/198.18.0.1/tcp/8845', /^\/d\/bootstrap line 2: .*has no \/p2p\/<peer id>/],
    ['not a multiaddr', /^\/d\/bootstrap line 2: "not a multiaddr" is not a multiaddr/],
    [`/ip4/198.18.0.1/tcp/8845/p2p/${RSA}`, /^\/d\/bootstrap line 2: .*does not name an Ed25519 peer/],
    [`/dnsaddr/x.example.org/p2p/${RSA}`, /^\/d\/bootstrap line 2: .*does not name an Ed25519 peer/],
  ];
  for (const [line, expected] of cases) {
    const error = (() => {
      try {
        parseBootstrapFile(`# ok\n${line}\n`, '/d/bootstrap');
      } catch (e) {
        return e;
      }
      return null;
    })();
    assert.instanceOf(error, BootstrapFileError, line);
    assert.match((error as Error).message, expected);
  }
});

test('bootstrap file: none in the data directory is an empty list; one is read', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-bootstrap-'));
  try {
    assert.deepEqual(await readBootstrapFile(dir), []);
    await writeFile(join(dir, BOOTSTRAP_FILE), `/ip4/198.18.0.1/tcp/8845/p2p/${A}\n`);
    assert.deepEqual(await readBootstrapFile(dir), [`/ip4/198.18.0.1/tcp/8845/p2p/${A}`]);
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('/dnsaddr: TXT records of _dnsaddr.<name> give the peers, names inside followed, a named peer filtered', async () => {
  const lookup = txt({
    '_dnsaddr.boot.example.org': [
      `dnsaddr=/ip4/198.18.0.1/tcp/8845/p2p/${A}`,
      'dnsaddr=/dnsaddr/more.example.org',
      'v=spf1 -all',
      'dnsaddr=/ip4/198.18.0.9/tcp/8845',
      'dnsaddr=garbage',
    ],
    '_dnsaddr.more.example.org': [`dnsaddr=/ip4/198.18.0.2/tcp/8845/p2p/${B}`, `dnsaddr=/ip4/198.18.0.2/tcp/8846/ws/p2p/${B}`],
  });
  const failures: string[] = [];
  const plain = `/ip4/198.18.0.3/tcp/8845/p2p/${B}`;
  const found = await resolveBootstrap([plain, '/dnsaddr/boot.example.org', `/dnsaddr/more.example.org/p2p/${A}`], lookup, (entry, reason) =>
    failures.push(`${entry}: ${reason}`),
  );
  assert.deepEqual(found, [plain, `/ip4/198.18.0.1/tcp/8845/p2p/${A}`, `/ip4/198.18.0.2/tcp/8845/p2p/${B}`, `/ip4/198.18.0.2/tcp/8846/ws/p2p/${B}`]);
  // more.example.org lists no address of A: said, and nothing taken.
  assert.deepEqual(failures, [`/dnsaddr/more.example.org/p2p/${A}: its TXT records list no address with /p2p/<peer id>`]);
});

test('/dnsaddr: a name that does not resolve, or names nested too deep, are reported and give nothing', async () => {
  const loop = txt({ '_dnsaddr.loop.example.org': ['dnsaddr=/dnsaddr/loop.example.org'] });
  const failures: string[] = [];
  const found = await resolveBootstrap(['/dnsaddr/gone.example.org', '/dnsaddr/loop.example.org'], loop, (entry, reason) =>
    failures.push(`${entry}: ${reason}`),
  );
  assert.deepEqual(found, []);
  assert.match(failures[0]!, /^\/dnsaddr\/gone\.example\.org: queryTxt ENOTFOUND _dnsaddr\.gone\.example\.org/);
  assert.match(failures[1]!, /^\/dnsaddr\/loop\.example\.org: \/dnsaddr names nested more than 4 deep/);
  assert.lengthOf(
    loop.asked.filter((n) => n === '_dnsaddr.loop.example.org'),
    4,
    'the loop is followed 4 deep, then given up',
  );
});

test('/dnsaddr: a node joins through a name whose TXT record lists the first node', async () => {
  let first: Libp2pNetwork | undefined;
  let second: Libp2pNetwork | undefined;
  try {
    first = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [] });
    const lookup = txt({ '_dnsaddr.boot.mesh.test': first.addresses().map((a) => `dnsaddr=${a}`) });
    const bootstrap = await resolveBootstrap(['/dnsaddr/boot.mesh.test'], lookup, (entry, reason) => assert.fail(`${entry}: ${reason}`));
    second = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap });
    const target = first.libp2p.peerId;
    const deadline = Date.now() + 10_000;
    while (!second.libp2p.getPeers().some((p) => p.equals(target))) {
      if (Date.now() > deadline) assert.fail('the second node did not connect to the first through /dnsaddr/boot.mesh.test');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await second?.stop();
    await first?.stop();
  }
});
