/**
 * The ledger benchmark's measurements, web-standard like the core they exercise (the Node entry,
 * node.ts, passes the host's native crypto, and adds the garbage collector and memory figures):
 *
 * 1. a full block: validating and applying it (`applyBlock`: header rules, every signature,
 *    every transaction, the state root, the undo record) next to its signature checks alone
 *    (`verifyBatch` over exactly the messages it carries), with the phases measured one by one;
 * 2. the state root: the time of `stateRoot()` after k changed entries, in states of growing size.
 */
import { type CryptoBackends, coreCrypto } from '../../core/crypto/backends.ts';
import { verifyBatch } from '../../core/crypto/ed25519.ts';
import { countingSha256 } from '../../core/crypto/sha256.test-util.ts';
import { ByteArena, bytesKey } from '../../core/encoding/bytes.ts';
import { applyTx, signedMessages } from '../../core/ledger/apply.ts';
import { decodeBlock } from '../../core/ledger/block.ts';
import { ProducerSchedule } from '../../core/ledger/producer.ts';
import { LedgerState } from '../../core/ledger/state.ts';
import type { TxKind } from '../../core/ledger/tx.ts';
import { applyBlock, checkContents, checkHeader, headerMessage } from '../../core/ledger/validate.ts';
import { seededRandom } from '../lib/random.ts';
import { type Contender, compare, formatDuration, type Measurement, median } from '../lib/timing.ts';
import { accountsState, type BlockWorkload, fillerEntry } from './fixture.ts';

/** What the block case measured, for one SHA-256 implementation. */
export interface BlockCase {
  /** The SHA-256 the core used: the host's native one, or its own WebAssembly. */
  readonly sha256: string;
  readonly txs: number;
  readonly signatures: number;
  readonly kinds: Readonly<Partial<Record<TxKind, number>>>;
  readonly blockBytes: number;
  readonly stateEntries: number;
  readonly changedEntries: number;
  /** Every contender, with its ratio to the signature checks alone. */
  readonly rows: readonly (Measurement & { readonly ratio: number; readonly phase: boolean })[];
  /** applyBlock ÷ signatures alone, the ratio of their medians: the goal's figure. */
  readonly ratio: number;
  /**
   * The median of the per-round ratios (each round times both once, side by side): steadier than
   * the ratio of medians when other work on the machine comes and goes during the run.
   */
  readonly pairedRatio: number;
  /** decodeBlock + applyBlock ÷ signatures alone: a block as it arrives from the network. */
  readonly ratioWithDecode: number;
  /** SHA-256 computations of the block's state root, if counted. */
  readonly stateRootHashes: number | null;
  /** The share of the machine's CPU time other processes took while this was measured, if known. */
  readonly othersCpu: number | null;
}

/** The state root's cost after k changed entries, in one state. */
export interface RootPoint {
  readonly changed: number;
  readonly medianNs: number;
  readonly perEntryNs: number;
  readonly samples: number;
  /** SHA-256 computations per changed entry (key, value, and the trie nodes above it), if counted. */
  readonly hashesPerEntry: number | null;
}

export interface RootCase {
  readonly size: number;
  /** Entries in the state (the size, plus the supply entry if any). */
  readonly entries: number;
  /** Creating the accounts (encoding them and filling the map), and the first root over all. */
  readonly buildMs: number;
  readonly firstRootMs: number;
  /** Heap and buffer bytes the state holds once its root is computed (null: not measurable here). */
  readonly memoryBytes: number | null;
  readonly points: readonly RootPoint[];
}

export const SIGNATURES = 'signatures alone: verifyBatch';
/** Samples of each of the goal's contenders, and of each phase, in a full run. */
export const GOAL_SAMPLES = 41;
export const PHASE_SAMPLES = 15;
export const APPLY_BLOCK = 'applyBlock';
export const DECODE_APPLY = 'decodeBlock + applyBlock';

/** Options of a run; `log` prints progress and tables as they are measured. */
export interface LedgerCaseOptions {
  readonly quick: boolean;
  readonly log: (text: string) => void;
  /** The backends the core is given (default: its own). */
  readonly crypto?: CryptoBackends;
  /** Whether to count the SHA-256 computations of the state root (through `countingSha256`). */
  readonly countHashes?: boolean;
  /**
   * Starts watching the machine; the function returned says what share of all CPU time other
   * processes took since. Figures taken while others run are disturbed: the signature checks use
   * every core, the rest of a block one, so contention makes the block's ratio read low.
   */
  readonly watchOthers?: () => () => number;
}

/**
 * Measures one block workload with `options.crypto`: the goal's contenders (the signatures alone,
 * applyBlock, and with decoding) in interleaved rounds, then the phases in rounds of their own, on a
 * copy of the workload's state whose root that crypto hashes. The copy is put back to the parent's
 * (trie included) before every sample of a contender that changes it; the workload's state is not
 * touched.
 */
export async function measureBlock(w: BlockWorkload, sha256: string, options: LedgerCaseOptions): Promise<BlockCase> {
  const { block, parent, params } = w;
  const crypto = options.crypto ?? coreCrypto;
  const counter = countingSha256(crypto.sha256);
  const state = LedgerState.fromEntries(w.state.entries(), counter.hasher);
  state.stateRoot();
  const network = params.network;
  const ctx = { network, height: block.header.height, producer: block.header.producer, nameBlocks: params.nameBlocks };
  const base = state.mark();
  const reset = (): void => {
    state.revert(base);
    state.stateRoot();
  };
  const applyAll = (): void => {
    for (const tx of block.txs) applyTx(state, tx, ctx);
  };
  const contenders: (Contender & { phase: boolean })[] = [
    {
      name: SIGNATURES,
      role: 'baseline',
      phase: true,
      op: () => verifyBatch(w.messages, crypto.ed25519),
      note: `${w.messages.length.toLocaleString('en-US')} signatures: header, senders, co-signers, evidence; keys already imported`,
    },
    {
      name: APPLY_BLOCK,
      role: 'core',
      phase: false,
      setup: reset,
      op: () => applyBlock(state, block, parent, params, undefined, crypto),
      note: 'what the goal measures',
    },
    {
      name: DECODE_APPLY,
      role: 'core',
      phase: false,
      setup: reset,
      op: () => applyBlock(state, decodeBlock(network, block.bytes, crypto.sha256), parent, params, undefined, crypto),
      note: 'a block as it arrives',
    },
    {
      name: 'decodeBlock',
      role: 'core',
      phase: true,
      op: () => decodeBlock(network, block.bytes, crypto.sha256),
      note: 'not part of applyBlock: tx ids, block hash',
    },
    {
      name: 'header rules, tx_root, producer schedule',
      role: 'core',
      phase: true,
      op: () => {
        checkContents(block, crypto.sha256);
        checkHeader(block, parent, params);
        const schedule = new ProducerSchedule(parent.hash, parent.timestampMs, params.blockIntervalMs, state.weights());
        return schedule.earliest(block.header.producer);
      },
    },
    {
      name: 'collect the signed messages',
      role: 'core',
      phase: true,
      op: () => {
        const seen = new Set<string>();
        for (const tx of block.txs) seen.add(bytesKey(tx.id));
        const arena = new ByteArena();
        const messages = [headerMessage(block, params)];
        for (const tx of block.txs) messages.push(...signedMessages(tx, network, arena));
        return messages;
      },
      note: 'and the duplicate scan, as findInvalidSignatures does them',
    },
    {
      name: 'transactions through the state machine',
      role: 'core',
      phase: true,
      setup: reset,
      op: applyAll,
      note: 'applyTx × every transaction',
    },
    {
      name: 'state root',
      role: 'core',
      phase: true,
      setup: () => {
        reset();
        applyAll();
      },
      op: () => state.stateRoot(),
      note: `${w.changedEntries.toLocaleString('en-US')} changed entries`,
    },
    {
      name: 'undo record',
      role: 'core',
      phase: true,
      setup: () => {
        reset();
        applyAll();
        state.stateRoot();
      },
      op: () => state.changesSince(base),
      note: 'changesSince',
    },
  ];
  const othersSince = options.watchOthers?.();
  // The goal's three contenders first, in rounds of their own: the phases' setups (a block applied
  // again and again) leave garbage whose collection would otherwise land in the goal's samples.
  // Then the phases, with fewer samples: they explain the figure, they are not it.
  const goal = contenders.slice(0, 3);
  const timing = { minSampleMs: 20, warmupMs: options.quick ? 100 : 300 };
  const measured = [
    ...(await compare(goal, { ...timing, samples: options.quick ? 5 : GOAL_SAMPLES })),
    ...(await compare(contenders.slice(3), { ...timing, samples: options.quick ? 5 : PHASE_SAMPLES })),
  ];
  const othersCpu = othersSince?.() ?? null;
  reset();
  applyAll();
  const stateRootHashes = options.countHashes ? counter.count(() => state.stateRoot()) : null;
  reset();
  const reference = measured.find((m) => m.name === SIGNATURES)!.medianNs;
  const rows = measured.map((m, i) => ({ ...m, ratio: m.medianNs / reference, phase: contenders[i]!.phase }));
  const rowOf = (name: string): (typeof rows)[number] => rows.find((r) => r.name === name)!;
  const ratioOf = (name: string): number => rowOf(name).ratio;
  const signatures = rowOf(SIGNATURES).samplesNs;
  const result: BlockCase = {
    sha256,
    txs: block.txs.length,
    signatures: w.messages.length,
    kinds: w.kinds,
    blockBytes: block.bytes.length,
    stateEntries: w.stateEntries,
    changedEntries: w.changedEntries,
    rows,
    ratio: ratioOf(APPLY_BLOCK),
    pairedRatio: median(rowOf(APPLY_BLOCK).samplesNs.map((ns, i) => ns / signatures[i]!)),
    ratioWithDecode: ratioOf(DECODE_APPLY),
    stateRootHashes,
    othersCpu,
  };
  options.log(formatBlockCase(result));
  return result;
}

/** The block case as a text table. */
export function formatBlockCase(c: BlockCase): string {
  const lines = [`  block of ${c.txs} transactions, ${c.signatures} signatures, ${c.sha256} crypto:`];
  for (const r of c.rows) {
    const name = `${r.phase && r.name !== SIGNATURES ? '  phase: ' : ''}${r.name}`;
    lines.push(`    ${name.padEnd(52)} ${formatDuration(r.medianNs).padStart(9)}  ${r.ratio.toFixed(2)}×`);
  }
  lines.push(
    `  applyBlock ÷ signatures alone: ${c.ratio.toFixed(2)}× (median of the per-round ratios ${c.pairedRatio.toFixed(2)}×; ` +
      `with decode ${c.ratioWithDecode.toFixed(2)}×)`,
  );
  if (c.stateRootHashes !== null) lines.push(`  the state root hashed ${c.stateRootHashes} times for ${c.changedEntries} changed entries`);
  if (c.othersCpu !== null) lines.push(`  other processes took ${percent(c.othersCpu)} of the machine's CPU time meanwhile`);
  return lines.join('\n');
}

/** Host services the state-root case can use where the runtime offers them. */
export interface MemoryProbe {
  /**
   * Bytes held by the JavaScript heap and by buffers outside it, once garbage is collected and its
   * buffers are freed, so the figure is what live objects hold.
   */
  readonly settledBytes: () => Promise<number>;
}

export const ROOT_SIZES = [10_000, 100_000, 1_000_000] as const;
export const ROOT_CHANGES = [1, 100, 3_000] as const;

/**
 * For each size, builds a state of that many accounts, then times `stateRoot()` after changing
 * k random entries (fresh ones for every sample, never timed), for every k of ROOT_CHANGES.
 */
export async function measureRoots(sizes: readonly number[], options: LedgerCaseOptions & { readonly memory?: MemoryProbe }): Promise<RootCase[]> {
  const out: RootCase[] = [];
  for (const size of sizes) {
    const before = (await options.memory?.settledBytes()) ?? 0;
    let started = performance.now();
    const counter = countingSha256((options.crypto ?? coreCrypto).sha256);
    const state = accountsState(size, counter.hasher);
    const buildMs = performance.now() - started;
    started = performance.now();
    state.stateRoot();
    const firstRootMs = performance.now() - started;
    const memoryBytes = options.memory ? (await options.memory.settledBytes()) - before : null;
    const random = seededRandom(size);
    let version = 1;
    const change = (k: number): void => {
      const mark = state.mark();
      version++;
      for (let i = 0; i < k; i++) {
        const [key, value] = fillerEntry(Math.floor(random() * size), version);
        state.put(key, value);
      }
      // Forget the journal: this state has no block to undo, and a long run would pile it up.
      state.commit(mark);
    };
    const measured = await compare(
      ROOT_CHANGES.map((k) => ({
        name: `k = ${k}`,
        role: 'core',
        // More samples where one is short (a few µs), so the median is steady.
        samples: Math.max(options.quick ? 5 : 15, Math.round((options.quick ? 60 : 200) / Math.sqrt(k))),
        setup: () => change(k),
        op: () => state.stateRoot(),
      })),
      { samples: 15, minSampleMs: 1, warmupMs: options.quick ? 50 : 200 },
    );
    const points = measured.map((m, i): RootPoint => {
      const k = ROOT_CHANGES[i]!;
      let hashesPerEntry: number | null = null;
      if (options.countHashes) {
        // Averaged over several changes where one is small: a single entry's depth varies.
        const rounds = Math.ceil(300 / k);
        let hashes = 0;
        for (let i = 0; i < rounds; i++) {
          change(k);
          hashes += counter.count(() => state.stateRoot());
        }
        hashesPerEntry = hashes / (rounds * k);
      }
      return { changed: k, medianNs: m.medianNs, perEntryNs: m.medianNs / k, samples: m.samplesNs.length, hashesPerEntry };
    });
    const result: RootCase = { size, entries: state.size, buildMs, firstRootMs, memoryBytes, points };
    out.push(result);
    options.log(formatRootCase(result));
  }
  return out;
}

/** A share as a whole percentage: "12%". */
export function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** Memory held by a state of `size` accounts: "137 MiB (1435 B/account)". */
export function formatMemory(bytes: number, size: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB (${Math.round(bytes / size)} B/account)`;
}

/** One state size's figures as a line of text. */
export function formatRootCase(c: RootCase): string {
  const memory = c.memoryBytes === null ? '' : `, ${formatMemory(c.memoryBytes, c.size)}`;
  const points = c.points.map(
    (p) =>
      `k=${p.changed} ${formatDuration(p.medianNs)} (${formatDuration(p.perEntryNs)}/entry` +
      `${p.hashesPerEntry === null ? '' : `, ${p.hashesPerEntry.toFixed(1)} hashes/entry`})`,
  );
  return (
    `  ${c.size.toLocaleString('en-US')} accounts: built in ${formatDuration(c.buildMs * 1e6)}, first root ` +
    `${formatDuration(c.firstRootMs * 1e6)}${memory}; stateRoot after ${points.join(', ')}`
  );
}
