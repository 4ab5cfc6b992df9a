/**
 * Block validation and application: header rules, the producer schedule, every signature in one
 * batch, then each transaction through the state machine, then the state root. On any failure the
 * state is returned to exactly where it was and InvalidBlockError names the rule.
 */

import { type CryptoBackends, coreCrypto } from '../crypto/backends.ts';
import { defaultEd25519Backend, type Ed25519Backend, type SignedMessage, verifyBatch } from '../crypto/ed25519.ts';
import { coreSha256, type Sha256Hasher } from '../crypto/sha256.ts';
import { ByteArena, bytesEqual, bytesKey } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { applyTx, LedgerRuleError, signedMessages, type TxEffect } from './apply.ts';
import { type Block, type BlockRuleCode, InvalidBlockError, txRoot } from './block.ts';
import { blockSigningBytes, HEADER_VERSION } from './header.ts';
import { type ChainParams, MAX_TXS_PER_BLOCK } from './params.ts';
import { advanceSeed, scheduleAfter } from './producer.ts';
import type { Change, LedgerState } from './state.ts';

/** The parent a block builds on: its height, hash and timestamp. */
export interface ParentInfo {
  readonly height: number;
  readonly hash: Uint8Array;
  readonly timestampMs: number;
}

/** What applying a block did: one effect per transaction and the net state changes. */
export interface Applied {
  readonly effects: readonly TxEffect[];
  readonly changes: readonly Change[];
}

function fail(code: BlockRuleCode, message: string): never {
  throw new InvalidBlockError(code, message);
}

/**
 * The checks a relay could break without the producer's key: the transactions against the header
 * (tx_count, tx_root). A chain runs them as a block arrives, before it judges or keeps the block.
 */
export function checkContents(block: Block, sha: Sha256Hasher = coreSha256): void {
  const h = block.header;
  if (block.txs.length > MAX_TXS_PER_BLOCK || h.tx_count !== block.txs.length) {
    fail('bad-tx-count', `header says ${h.tx_count} transactions, block has ${block.txs.length}`);
  }
  if (
    !bytesEqual(
      h.tx_root,
      txRoot(
        block.txs.map((t) => t.id),
        sha,
      ),
    )
  )
    fail('bad-tx-root', `block ${h.height}: tx_root does not match the transactions`);
}

/**
 * The checks that need no state beyond the parent: version, height, link, count bound, time (the
 * transactions against the header are `checkContents`'). `nowMs`, when given, bounds how far ahead of the local clock the timestamp may be (set for blocks
 * arriving from the network, not for blocks replayed from storage).
 */
export function checkHeader(block: Block, parent: ParentInfo, params: ChainParams, nowMs?: number): void {
  const h = block.header;
  if (block.txs.length > MAX_TXS_PER_BLOCK || h.tx_count > MAX_TXS_PER_BLOCK) {
    fail('too-many-txs', `block holds ${Math.max(block.txs.length, h.tx_count)} transactions, more than ${MAX_TXS_PER_BLOCK}`);
  }
  if (h.version !== HEADER_VERSION) fail('bad-version', `block version ${h.version} is not ${HEADER_VERSION}`);
  if (h.height !== parent.height + 1) fail('bad-height', `block height ${h.height} does not follow ${parent.height}`);
  if (!bytesEqual(h.prev_hash, parent.hash)) fail('bad-prev-hash', `block ${h.height} does not link to its parent`);
  if (h.timestamp_ms <= parent.timestampMs) fail('timestamp-not-increasing', `timestamp ${h.timestamp_ms} is not after the parent's ${parent.timestampMs}`);
  if (nowMs !== undefined && h.timestamp_ms > nowMs + params.maxClockDriftMs) {
    fail('timestamp-in-future', `timestamp ${h.timestamp_ms} is more than ${params.maxClockDriftMs} ms ahead of local time ${nowMs}`);
  }
}

/** The producer's signature over the header alone (checked before anything is stored). */
export function headerMessage(block: Block, params: ChainParams): SignedMessage {
  return {
    publicKey: block.header.producer,
    message: blockSigningBytes(params.network, block.header),
    signature: block.signature,
  };
}

// Signatures in flight at once when checking many blocks: WINDOWS_AHEAD windows of VERIFY_WINDOW,
// enough to keep every core busy while this thread applies a range (catch-up read 1.30x its
// signatures alone with three, 1.41-1.57x with two), few enough that a branch of 500 full blocks
// does not hold half a million pending checks, nor a block arriving meanwhile wait long behind them.
export const VERIFY_WINDOW = 8_192;
export const WINDOWS_AHEAD = 3;
// In a range of at least twice as many transactions, a small window goes out first, as soon as its
// messages are gathered, so the other cores start on it while this thread gathers the rest:
// gathering a full block's messages took as long as checking a hundred of its signatures.
const FIRST_WINDOW = 128;

// The checks of one block that need neither state, parent nor signatures: the count bound, no
// transaction twice, the reward first if present.
function checkShape(block: Block): void {
  const h = block.header;
  if (block.txs.length > MAX_TXS_PER_BLOCK || h.tx_count > MAX_TXS_PER_BLOCK) {
    fail('too-many-txs', `block holds ${Math.max(block.txs.length, h.tx_count)} transactions, more than ${MAX_TXS_PER_BLOCK}`);
  }
  const seen = new Set<string>();
  for (let i = 0; i < block.txs.length; i++) {
    const tx = block.txs[i]!;
    const id = bytesKey(tx.id);
    if (seen.has(id)) fail('duplicate-tx', `transaction ${i} repeats ${toHex(tx.id)}`);
    seen.add(id);
    if (tx.body.kind === 'UptimeReward' && i !== 0) fail('reward-not-first', 'the UptimeReward must be the first transaction, and only one is allowed');
  }
}

function badSignature(block: Block, owner: number): InvalidBlockError {
  if (owner === -1) return new InvalidBlockError('bad-block-signature', `block ${block.header.height} is not signed by its producer`);
  const tx = block.txs[owner]!;
  return new InvalidBlockError('bad-tx-signature', `transaction ${owner} (${tx.body.kind} ${toHex(tx.id)}) carries a bad signature`);
}

/**
 * The checks that need neither state nor parent, then every signature of `blocks` (headers, senders,
 * co-signers, evidence), batched across the blocks so that the cores stay busy however few
 * transactions each block holds. The checks without signatures run on every block first, so a
 * malformed block costs no signature check. Async; touches no state. `headersVerified`: the
 * producers' signatures on the headers are known good already and are not checked again.
 * @returns null, or the first block (by position) that fails and why, with `verified`: how many
 * blocks before it had every signature verified (none when a block fails before any is checked).
 * `backend` checks the equations.
 */
export async function findInvalidSignatures(
  blocks: readonly Block[],
  params: ChainParams,
  headersVerified = false,
  backend: Ed25519Backend = defaultEd25519Backend,
): Promise<{ readonly index: number; readonly error: InvalidBlockError; readonly verified: number } | null> {
  let txs = 0;
  for (let b = 0; b < blocks.length; b++) {
    try {
      checkShape(blocks[b]!);
    } catch (error) {
      // Found before any signature was verified: no block of the range is vouched for.
      if (error instanceof InvalidBlockError) return { index: b, error, verified: 0 };
      throw error;
    }
    txs += blocks[b]!.txs.length;
  }
  // Where window w starts among the messages; a small first window is in flight besides the others.
  const small = txs >= 2 * FIRST_WINDOW;
  const firstSize = small ? FIRST_WINDOW : VERIFY_WINDOW;
  const windowStart = (w: number): number => (w === 0 ? 0 : firstSize + (w - 1) * VERIFY_WINDOW);
  // For each message, the block holding it and its owner there (-1: the header).
  const messages: SignedMessage[] = [];
  const ownerBlocks: number[] = [];
  const owners: number[] = [];
  let count = 0;
  let gathered = false;
  // The windows go out WINDOWS_AHEAD at a time, so that a range's next window is queued before the
  // one under way is done: checks of several ranges under way at once (sync checks one while it
  // applies another) then run a range after the other, instead of the first range's later windows
  // waiting behind the next ranges' first ones.
  const windows: Promise<boolean[]>[] = [];
  const send = (): void => {
    const start = windowStart(windows.length);
    const end = Math.min(count, windowStart(windows.length + 1));
    if (start >= end) return;
    const window = verifyBatch(messages.slice(start, end), backend);
    // A window left unawaited (one before it failed) must not reject unhandled.
    window.catch(() => {});
    windows.push(window);
    // The last window is out: the messages are the backend's now (they are many, and would outlive
    // their use while the windows are checked).
    if (gathered && end === count) messages.length = 0;
  };
  const add = (message: SignedMessage, block: number, owner: number): void => {
    messages.push(message);
    ownerBlocks.push(block);
    owners.push(owner);
    if (++count === FIRST_WINDOW && small) send();
  };
  // The messages are let go together once checked: one arena spares an allocation each.
  const arena = new ByteArena();
  for (let b = 0; b < blocks.length; b++) {
    const block = blocks[b]!;
    if (!headersVerified) add(headerMessage(block, params), b, -1);
    for (let i = 0; i < block.txs.length; i++) {
      for (const m of signedMessages(block.txs[i]!, params.network, arena)) add(m, b, i);
    }
  }
  gathered = true;
  while (windows.length < WINDOWS_AHEAD + (small ? 1 : 0) && windowStart(windows.length) < count) send();
  for (let w = 0; w < windows.length; w++) {
    const bad = (await windows[w]!).indexOf(false);
    if (bad >= 0) {
      const at = windowStart(w) + bad;
      const failed = ownerBlocks[at]!;
      // Messages are in block order: every block before this one had all its signatures verified.
      return { index: failed, error: badSignature(blocks[failed]!, owners[at]!), verified: failed };
    }
    // The small window done, WINDOWS_AHEAD full ones are still in flight.
    if (!(small && w === 0)) send();
  }
  return null;
}

/** `findInvalidSignatures` for one block: throws its InvalidBlockError. */
export async function verifyBlockSignatures(block: Block, params: ChainParams, backend: Ed25519Backend = defaultEd25519Backend): Promise<void> {
  const found = await findInvalidSignatures([block], params, false, backend);
  if (found) throw found.error;
}

/**
 * Applies a block whose contents `checkContents` matched against its header and whose signatures
 * `verifyBlockSignatures` accepted, on top of `state` (the
 * parent's state): header rules, the producer schedule, each transaction, the state root.
 * Synchronous, so no reader ever sees a half-applied block. Throws InvalidBlockError with state
 * untouched; on success `state` is the block's state and the returned changes are its undo record.
 */
export function applyVerifiedBlock(state: LedgerState, block: Block, parent: ParentInfo, params: ChainParams, nowMs?: number): Applied {
  checkHeader(block, parent, params, nowMs);
  const h = block.header;
  const schedule = scheduleAfter(state, parent, params.blockIntervalMs);
  const earliest = schedule.earliest(h.producer);
  if (h.timestamp_ms < earliest) {
    fail('producer-too-early', `producer ${toHex(h.producer).slice(0, 16)}… may sign block ${h.height} from ${earliest}, not ${h.timestamp_ms}`);
  }
  const mark = state.mark();
  const effects: TxEffect[] = [];
  const ctx = { network: params.network, height: h.height, producer: h.producer, nameBlocks: params.nameBlocks };
  try {
    for (let i = 0; i < block.txs.length; i++) {
      const tx = block.txs[i]!;
      try {
        effects.push(applyTx(state, tx, ctx));
      } catch (error) {
        if (error instanceof LedgerRuleError) {
          fail('tx-rule', `transaction ${i} (${tx.body.kind} ${toHex(tx.id)}) breaks rule ${error.code}: ${error.message}`);
        }
        throw error;
      }
    }
    advanceSeed(state, h.producer);
    const root = state.stateRoot();
    if (!bytesEqual(root, h.state_root)) fail('bad-state-root', `state_root of block ${h.height} does not match the state after its transactions`);
  } catch (error) {
    state.revert(mark);
    throw error;
  }
  return { effects, changes: state.changesSince(mark) };
}

/**
 * Validates and applies `block` on `state` (the parent's state): its contents, its signatures and
 * `applyVerifiedBlock`. The signatures are checked on the other cores while this thread applies the
 * block; the block is concealed from every other caller of the state (`LedgerState.conceal`) while
 * their verdict is awaited and revealed once they pass, so no caller sees a block whose signatures
 * are not known good. A bad signature is reported before any broken rule, as if checked first.
 * `crypto` checks the signatures and the tx_root (the state hashes its root with its own).
 */
export async function applyBlock(
  state: LedgerState,
  block: Block,
  parent: ParentInfo,
  params: ChainParams,
  nowMs?: number,
  crypto: CryptoBackends = coreCrypto,
): Promise<Applied> {
  const signatures = verifyBlockSignatures(block, params, crypto.ed25519);
  const mark = state.mark();
  let outcome: { applied: Applied } | { error: unknown };
  try {
    checkContents(block, crypto.sha256);
    outcome = { applied: applyVerifiedBlock(state, block, parent, params, nowMs) };
  } catch (error) {
    outcome = { error };
  }
  // Hidden, not undone: nobody sees the block before its signatures pass, and if nobody touches the
  // state meanwhile, nothing is undone and redone.
  if ('applied' in outcome) state.conceal(mark);
  else state.revert(mark);
  try {
    await signatures;
  } catch (error) {
    state.discard();
    throw error;
  }
  if ('error' in outcome) throw outcome.error;
  state.reveal();
  return outcome.applied;
}
