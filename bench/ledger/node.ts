/**
 * `mesh bench ledger`, on Node: the full-block case with the core's own crypto and then with the
 * host's native one (as `mesh node` gives it to its chain), then the state root against the state's size, and writes bench/results/ledger.json and the
 * ledger section of bench/RESULTS.md.
 */
import { cpus } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { coreCrypto } from '../../core/crypto/backends.ts';
import { nodeCrypto } from '../../host-node/native-crypto.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type RunOptions } from '../lib/results.ts';
import { type BlockCase, type LedgerCaseOptions, type MemoryProbe, measureBlock, measureRoots, ROOT_SIZES } from './cases.ts';
import { blockWorkload } from './fixture.ts';
import { LEDGER_REPORT, type LedgerReport } from './report.ts';

/** Watches the CPU time of the whole machine against this process's own (its threads included). */
export function watchOthers(): () => number {
  const before = cpus();
  const own = process.cpuUsage();
  return () => {
    let used = 0;
    let all = 0;
    cpus().forEach((cpu, i) => {
      const b = before[i]?.times;
      if (!b) return;
      const t = cpu.times;
      const busy = t.user - b.user + (t.nice - b.nice) + (t.sys - b.sys) + (t.irq - b.irq);
      used += busy;
      all += busy + (t.idle - b.idle);
    });
    const mine = process.cpuUsage(own);
    const mineMs = (mine.user + mine.system) / 1000;
    return all > 0 ? Math.min(1, Math.max(0, (used - mineMs) / all)) : 0;
  };
}

/** The garbage collector and memory use, for the state-root case's memory figure. */
export function memoryProbe(): MemoryProbe {
  // --expose-gc at run time: the benchmark runs inside `mesh`, whose command line it does not own.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return {
    settledBytes: async () => {
      gc();
      // Buffers of collected objects are freed by a background task: let it run, then collect again.
      await delay(100);
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    },
  };
}

/** Options of `mesh bench ledger`. */
export type LedgerBenchOptions = RunOptions;

/** Runs `mesh bench ledger`; resolves to the exit code. */
export async function runLedgerBench(options: LedgerBenchOptions): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench ledger: Node only (the ledger is the same code on every runtime; a Node host is what runs it)');
  const cases: LedgerCaseOptions = { quick: options.quick, log, watchOthers };

  log('\n== a full block');
  const workload = await blockWorkload({ log });
  const blocks: BlockCase[] = [];
  log('\n-- SHA-256 by the core (WebAssembly), and its own Ed25519');
  const wasm = await measureBlock(workload, 'wasm', { ...cases, crypto: coreCrypto });
  log('\n-- SHA-256 by node:crypto and Ed25519 batches on worker threads, as the Node host gives them');
  const native = await nodeCrypto();
  blocks.push(await measureBlock(workload, 'native', { ...cases, crypto: native, countHashes: true }), wasm);

  const sizes = options.quick ? ROOT_SIZES.filter((n) => n <= 100_000) : ROOT_SIZES;
  log(`\n== state root against state size (${sizes.map((n) => n.toLocaleString('en-US')).join(', ')} accounts)`);
  const roots = await measureRoots(sizes, { ...cases, crypto: native, countHashes: true, memory: memoryProbe() });

  const report: LedgerReport = {
    command: options.command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node, v8: process.versions.v8, openssl: process.versions.openssl },
    blocks,
    roots,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(LEDGER_REPORT, report, { write: options.write, log });
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return 0;
}
