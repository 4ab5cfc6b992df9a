/**
 * `mesh bench crypto`, Node side: runs the shared crypto cases on Node (in this process, with
 * node:crypto as the baseline), then on Deno (a child process) and in headless Chromium, then
 * `openssl speed`, and writes bench/results/crypto.json and the crypto section of
 * bench/RESULTS.md.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey, hash, type KeyObject, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ED25519_PKCS8_PREFIX, type SignedMessage } from '../../core/crypto/ed25519.ts';
import { fromHex } from '../../core/encoding/hex.ts';
import { nativeSha256, nodeSha256 } from '../../host-node/native-crypto.ts';
import { describeMachine, REPO_ROOT, runFile, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type RunOptions } from '../lib/results.ts';
import { type CryptoHost, type RuntimeName, type RuntimeResult, runCryptoSuite } from './cases.ts';
import { runOpensslSpeed } from './openssl.ts';
import { CRYPTO_REPORT, type CryptoReport } from './report.ts';

export const RESULT_PREFIX = 'BENCH-RESULT ';

// DER wrapping of a raw Ed25519 public key (RFC 8410): a fixed header, then the 32 key bytes.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function publicKeyObject(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

// The two-thread split: each worker imports and verifies its half with the synchronous API.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createPublicKey, verify } = require('node:crypto');
const PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
parentPort.on('message', ({ id, items }) => {
  const verdicts = items.map((item) =>
    verify(null, item.message,
      createPublicKey({ key: Buffer.concat([PREFIX, item.publicKey]), format: 'der', type: 'spki' }),
      item.signature));
  parentPort.postMessage({ id, verdicts });
});
`;

class WorkerPair {
  readonly #workers = [new Worker(WORKER_SOURCE, { eval: true }), new Worker(WORKER_SOURCE, { eval: true })];
  #next = 0;
  readonly #waiting = new Map<number, (verdicts: boolean[]) => void>();

  constructor() {
    for (const worker of this.#workers) {
      worker.on('message', ({ id, verdicts }: { id: number; verdicts: boolean[] }) => {
        this.#waiting.get(id)?.(verdicts);
        this.#waiting.delete(id);
      });
    }
  }

  #ask(worker: Worker, items: readonly SignedMessage[]): Promise<boolean[]> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      worker.postMessage({ id, items });
    });
  }

  async verify(items: readonly SignedMessage[]): Promise<boolean[]> {
    const half = Math.ceil(items.length / 2);
    const [a, b] = await Promise.all([this.#ask(this.#workers[0]!, items.slice(0, half)), this.#ask(this.#workers[1]!, items.slice(half))]);
    return [...a, ...b];
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }
}

/** The Node host of the shared cases: node:crypto baselines, and the host's native SHA-256. */
export function nodeHost(log: (text: string) => void): { host: CryptoHost; close: () => Promise<void> } {
  let workers: WorkerPair | undefined;
  const host: CryptoHost = {
    runtime: 'node',
    version: process.versions.node,
    details: { v8: process.versions.v8, openssl: process.versions.openssl, uv: process.versions.uv },
    log,
    nativeSha256: [
      {
        name: "node:crypto hash(…, 'buffer')",
        note: 'bytes out, as the core gives',
        make: () => (data) => hash('sha256', data, 'buffer'),
      },
      {
        // The default output, a hex string: cheaper than a Buffer for small inputs (no
        // ArrayBuffer to allocate), but not the same work as the core's, which returns bytes.
        name: 'node:crypto hash() hex string',
        note: 'a string out, not bytes',
        make: () => (data) => hash('sha256', data),
      },
    ],
    sweepNativeSha256: [
      {
        name: 'native as the host installs it',
        installed: true,
        note: 'host-node/native-crypto.ts: hash() to a latin1 string, read back as bytes',
        make: () => nativeSha256,
      },
      {
        name: "hash(…, 'buffer')",
        installed: false,
        note: 'a Buffer out: the alternative the host does not use',
        make: () => (data) => hash('sha256', data, 'buffer'),
      },
      {
        name: 'hash() hex + fromHex',
        installed: false,
        note: "node:crypto's hex output decoded by the core's fromHex",
        make: () => (data) => fromHex(hash('sha256', data)),
      },
    ],
    hostSha256: { name: 'nodeSha256()', make: nodeSha256 },
    nativeSign: {
      name: 'node:crypto sign()',
      make: (seed) => {
        const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
        return (message) => nodeSign(null, message, key);
      },
    },
    nativeVerify: {
      name: 'node:crypto verify()',
      make: (publicKey) => {
        const key = publicKeyObject(publicKey);
        return (message, signature) => nodeVerify(null, message, key, signature);
      },
    },
    nativeBlockVerify: [
      {
        name: 'node:crypto ×2 cores, libuv callbacks',
        reference: true,
        note: 'createPublicKey + verify(…, cb) per item, all in flight',
        make: () => (items) =>
          Promise.all(
            items.map(
              (item) =>
                new Promise<boolean>((resolve, reject) => {
                  nodeVerify(null, item.message, publicKeyObject(item.publicKey), item.signature, (error, ok) => (error ? reject(error) : resolve(ok)));
                }),
            ),
          ),
      },
      {
        name: 'node:crypto ×2 worker_threads',
        reference: true,
        note: 'sync loop on each half',
        make: () => {
          workers ??= new WorkerPair();
          const pair = workers;
          return (items) => pair.verify(items);
        },
      },
      {
        name: 'node:crypto one core, sync loop',
        note: 'createPublicKey + verify per item',
        make: () => (items) => items.map((item) => nodeVerify(null, item.message, publicKeyObject(item.publicKey), item.signature)),
      },
    ],
  };
  return { host, close: async () => workers?.close() };
}

/** The Deno binary the npm `deno` package installs. */
function denoBinary(): string {
  return join(REPO_ROOT, 'node_modules', '.bin', 'deno');
}

/**
 * Runs the shared cases on Deno. No --allow flag is needed: the benchmark reads nothing, and
 * loading local modules and node_modules needs no permission; --no-prompt makes any access fail
 * instead of waiting for an answer.
 */
export async function runDeno(quick: boolean, log: (text: string) => void): Promise<RuntimeResult> {
  const args = ['run', '--no-prompt', join('bench', 'crypto', 'deno.ts'), ...(quick ? ['--quick'] : [])];
  const child = spawn(denoBinary(), args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderrTail = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-4000);
    log(chunk.replace(/\n$/, ''));
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
  if (code !== 0 || !line) {
    throw new Error(`deno ${args.join(' ')} exited with ${code}${stderrTail ? `: ${stderrTail.trim().split('\n').at(-1)}` : ''}`);
  }
  return JSON.parse(line.slice(RESULT_PREFIX.length)) as RuntimeResult;
}

export interface CryptoBenchOptions extends RunOptions {
  readonly runtimes: readonly RuntimeName[];
}

/** Runs `mesh bench crypto`; resolves to the exit code. */
export async function runCryptoBench(options: CryptoBenchOptions): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const sourceAtStart = await sourceState();
  const results: RuntimeResult[] = [];
  const failures: { runtime: RuntimeName; reason: string }[] = [];
  for (const runtime of options.runtimes) {
    try {
      if (runtime === 'node') {
        const { host, close } = nodeHost(log);
        try {
          results.push(await runCryptoSuite(host, { quick: options.quick }));
        } finally {
          await close();
        }
      } else if (runtime === 'deno') {
        results.push(await runDeno(options.quick, log));
      } else {
        // Loaded only when asked for: playwright-core and esbuild stay out of the Node figures' process otherwise.
        const { runChromium } = await import('./chromium.ts');
        results.push(await runChromium(options.quick, log));
      }
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      failures.push({ runtime, reason });
      process.stderr.write(`\nmesh bench crypto: ${runtime} failed: ${reason}\n`);
    }
  }
  log('\n== openssl speed');
  const openssl = await runOpensslSpeed({ quick: options.quick, run: runFile, cores: cpus().length });
  log(openssl.ok ? openssl.table : `  skipped: ${openssl.reason}`);

  const report: CryptoReport = {
    command: options.command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    runtimes: results,
    failures,
    openssl,
    ...(sourceAtStart ? { source: sourceAtStart } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(CRYPTO_REPORT, report, { write: options.write, log });
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return failures.length > 0 ? 1 : 0;
}
