/**
 * The ledger state: a map of binary keys to canonical values, held in memory, journaled so a block
 * (or a whole fork) can be undone exactly, and committed to by a Merkle trie (`stateRoot`).
 *
 * Keys are a one-byte prefix naming the table, then the entry's identifiers; values are canonical
 * encodings. Layout: docs/ledger.md "State".
 */

import { coreSha256, type Sha256Hasher, sha256Each } from '../crypto/sha256.ts';
import { bytesEqual, bytesKey, concatBytes, prefixedBytesKey } from '../encoding/bytes.ts';
import { bool, bytes32, decode, encode, type Infer, i128, option, struct, u8, u128, uint53 } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { MerkleTrie, type TrieLeaf } from './merkle.ts';

export const accountCodec = struct(
  {
    balance: i128,
    nonce: uint53,
    locked_bids: u128,
    locked_channels: u128,
    bond: u128,
    unbonding: u128,
    unbond_release: uint53,
    work_earned: u128,
  },
  'account',
);
export type Account = Infer<typeof accountCodec>;

export const jobCodec = struct(
  {
    payer: bytes32,
    host: option(bytes32),
    bid: u128,
    locked: u128,
    rate: u128,
    billing: u8,
    bid_height: uint53,
    active_height: uint53,
    /** Whether a host accepted it (JobAccept, or the named host's heartbeat): the long expiry protects it from then. */
    accepted: bool,
  },
  'job',
);
export type Job = Infer<typeof jobCodec>;

export const channelCodec = struct({ payer: bytes32, host: bytes32, capacity: u128, expiry_height: uint53, open_height: uint53 }, 'channel');
export type Channel = Infer<typeof channelCodec>;

export const nameCodec = struct({ owner: bytes32, expires: uint53 }, 'name');
export type NameEntry = Infer<typeof nameCodec>;

export const supplyCodec = struct({ emitted: u128, burned: u128 }, 'supply');
export type Supply = Infer<typeof supplyCodec>;

const heightCodec = uint53;
const weightCodec = u128;

/** Table prefixes. */
export const TABLE = {
  account: 0x61, // 'a' + id
  channel: 0x63, // 'c' + channel id
  epoch: 0x65, // 'e' + cell + host → last heartbeat epoch
  seed: 0x62, // 'b' → the producer-ranking seed
  supply: 0x67, // 'g'
  job: 0x6a, // 'j' + job id
  name: 0x6e, // 'n' + name (UTF-8)
  revoked: 0x72, // 'r' + issuer + token id → height revoked
  slashed: 0x73, // 's' + producer + height (8 bytes) → height slashed
  trust: 0x74, // 't' + granter + subject → height granted
  weight: 0x77, // 'w' + id → consensus weight, present only when > 0
} as const;

// The map key of the entry of `table` under `parts` (joined), built as a string: no key bytes to
// allocate and turn into a string, for the tables a transaction reads and writes.
function tableKey(table: number, ...parts: Uint8Array[]): string {
  return prefixedBytesKey(table, parts.length === 1 ? parts[0]! : concatBytes(...parts));
}

function heightBytes(height: number): Uint8Array {
  return encode(heightCodec, height);
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

// Map keys are `bytesKey` strings, reversible.
const keyString = bytesKey;
function keyBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

const SEED_KEY = String.fromCharCode(TABLE.seed);
const SUPPLY_KEY = String.fromCharCode(TABLE.supply);
const accountKey = (id: Uint8Array): string => prefixedBytesKey(TABLE.account, id);

const ACCOUNT_CACHE_MAX = 65_536;
// Key hashes (trie paths) of recently changed entries: active accounts change block after block.
const PATH_CACHE_MAX = 65_536;

const ZERO_ACCOUNT: Account = Object.freeze({
  balance: 0n,
  nonce: 0,
  locked_bids: 0n,
  locked_channels: 0n,
  bond: 0n,
  unbonding: 0n,
  unbond_release: 0,
  work_earned: 0n,
});

const asBytes = (v: Held | undefined): Uint8Array | undefined => (v === undefined || v instanceof Uint8Array ? v : encode(accountCodec, v));

/** One changed entry: its key, the value before (undefined: absent) and after. */
export interface Change {
  readonly key: Uint8Array;
  readonly before: Uint8Array | undefined;
  readonly after: Uint8Array | undefined;
}

// A value as held: its bytes, or an account written since the state root was last taken, kept
// decoded until its bytes are asked for (see `setAccount`).
type Held = Uint8Array | Account;

interface JournalEntry {
  readonly key: string;
  readonly before: Held | undefined;
}

/** The bond still locked at `height`: the active bond plus an unbonding amount not yet released. */
export function lockedBond(account: Account, height: number): bigint {
  return account.bond + (account.unbond_release > height ? account.unbonding : 0n);
}

/** Balance minus every lock (bids, channels, bond), clamped at 0: what the account can spend at `height`. */
export function freeBalance(account: Account, height: number): bigint {
  const free = account.balance - account.locked_bids - account.locked_channels - lockedBond(account, height);
  return free > 0n ? free : 0n;
}

/** Consensus weight: the smaller of the active bond and the earned-work score. */
export function weightOf(account: Account): bigint {
  return account.bond < account.work_earned ? account.bond : account.work_earned;
}

export class LedgerState {
  readonly #values = new Map<string, Held>();
  readonly #journal: JournalEntry[] = [];
  readonly #sha: Sha256Hasher;
  #trie: MerkleTrie;
  // Keys changed since the trie was last brought up to date, each with the value the trie holds for
  // it: a key written back to that very value (a block undone and redone) costs no hashing.
  readonly #dirty = new Map<string, Held | undefined>();
  // Mirror of the weight table (hex id → weight) for producer ranking.
  readonly #weights = new Map<string, bigint>();
  // Decoded accounts held as bytes, by map key, frozen, each with the very bytes it was decoded
  // from: a transaction reads its accounts several times, and decoding cost more than the rules
  // themselves. An entry counts only while the state holds those bytes, so writes need not drop it,
  // and an account put back by an undo and redo (as `applyBlock` does) is still decoded. (An
  // account written since the last state root is held decoded: see `setAccount`.)
  readonly #accounts = new Map<string, { readonly bytes: Uint8Array; readonly account: Account }>();
  // Trie paths by map key, bounded like the accounts: hashing the key again cost as much as its value.
  readonly #paths = new Map<string, Uint8Array>();
  // Mirror of the name table by holder (hex id → names), so a node's names are listed without a
  // scan of the whole state. Kept by every write (undo and redo included), so it is never stale.
  readonly #namesByOwner = new Map<string, Set<string>>();
  // Changes hidden from callers until revealed (see `conceal`): their mark, and once a caller had
  // them undone, what was undone, to redo.
  #concealed: { readonly mark: number; undone: Change[] | null } | null = null;

  /** An empty state whose root `sha` hashes. */
  constructor(sha: Sha256Hasher = coreSha256) {
    this.#sha = sha;
    this.#trie = new MerkleTrie(sha);
  }

  /** A state holding exactly `entries` (from storage or a verified snapshot), its root hashed by `sha`. */
  static fromEntries(entries: Iterable<readonly [Uint8Array, Uint8Array]>, sha: Sha256Hasher = coreSha256): LedgerState {
    const state = new LedgerState(sha);
    for (const [k, v] of entries) state.#set(keyString(k), v.slice());
    state.#journal.length = 0;
    // One bulk build of the trie instead of an insertion per entry.
    const keys = [...state.#dirty.keys()];
    state.#dirty.clear();
    const paths = sha256Each(keys.map(keyBytes), sha);
    const valueHashes = sha256Each(
      keys.map((s) => state.#values.get(s) as Uint8Array),
      sha,
    );
    const leaves: TrieLeaf[] = keys.map((_, i) => ({
      path: paths.subarray(32 * i, 32 * i + 32),
      valueHash: valueHashes.subarray(32 * i, 32 * i + 32),
    }));
    state.#trie = MerkleTrie.fromLeaves(leaves, sha);
    return state;
  }

  get size(): number {
    this.#settle();
    return this.#values.size;
  }

  // ---- raw access, journaled ---------------------------------------------------------------

  /** The bytes held under `k`: the state's own, to read and never to change. */
  get(k: Uint8Array): Uint8Array | undefined {
    this.#settle();
    return this.#bytes(keyString(k));
  }

  // The bytes held under `s`: an account kept decoded is encoded, and held as bytes from then on.
  #bytes(s: string, v: Held | undefined = this.#values.get(s)): Uint8Array | undefined {
    if (v === undefined || v instanceof Uint8Array) return v;
    const bytes = encode(accountCodec, v);
    // Not a write: the same value, in the form the trie, the journal's readers and storage take.
    this.#values.set(s, bytes);
    this.#remember(s, bytes, v);
    return bytes;
  }

  /** Holds a copy of `value` under `k`: what the caller does with its bytes afterwards changes nothing here. */
  put(k: Uint8Array, value: Uint8Array): void {
    this.#settle();
    this.#put(keyString(k), value.slice());
  }

  // The state's own writers hand over bytes they just made and keep no hold of: no copy needed.
  // `held` is what `s` holds now, when the caller has just read it.
  #put(s: string, value: Held, held: Held | undefined = this.#values.get(s)): void {
    this.#journal.push({ key: s, before: held });
    this.#set(s, value, held);
  }

  delete(k: Uint8Array): void {
    this.#settle();
    this.#delete(keyString(k));
  }

  #delete(s: string): void {
    const held = this.#values.get(s);
    if (held === undefined) return;
    this.#journal.push({ key: s, before: held });
    this.#set(s, undefined, held);
  }

  #set(s: string, value: Held | undefined, held: Held | undefined = this.#values.get(s)): void {
    if (s.charCodeAt(0) === TABLE.name) this.#indexName(s, held as Uint8Array | undefined, value as Uint8Array | undefined);
    if (!this.#dirty.has(s)) this.#dirty.set(s, held);
    if (value === undefined) this.#values.delete(s);
    else this.#values.set(s, value);
    if (s.charCodeAt(0) === TABLE.weight) {
      const id = toHex(keyBytes(s).subarray(1));
      if (value === undefined) this.#weights.delete(id);
      else this.#weights.set(id, decode(weightCodec, value as Uint8Array));
    }
  }

  #indexName(s: string, before: Uint8Array | undefined, after: Uint8Array | undefined): void {
    const name = textDecoder.decode(keyBytes(s).subarray(1));
    if (before !== undefined) {
      const owner = toHex(decode(nameCodec, before).owner);
      const names = this.#namesByOwner.get(owner);
      names?.delete(name);
      if (names?.size === 0) this.#namesByOwner.delete(owner);
    }
    if (after !== undefined) {
      const owner = toHex(decode(nameCodec, after).owner);
      const names = this.#namesByOwner.get(owner) ?? new Set<string>();
      names.add(name);
      this.#namesByOwner.set(owner, names);
    }
  }

  /** A point to return to with `revert` or to collect changes from with `changesSince`. */
  mark(): number {
    this.#settle();
    return this.#journal.length;
  }

  /** Undoes every change made after `mark`. */
  revert(mark: number): void {
    this.#settle();
    this.#revert(mark);
  }

  #revert(mark: number): void {
    if (this.#journal.length - mark <= 8) {
      while (this.#journal.length > mark) {
        const entry = this.#journal.pop()!;
        this.#set(entry.key, entry.before);
      }
      return;
    }
    // Each key is put back once, to its value at the mark: a block writes its busy accounts many
    // times, and undoing every write one by one cost as much as making them.
    const first = new Map<string, Held | undefined>();
    for (let i = this.#journal.length - 1; i >= mark; i--) {
      const entry = this.#journal[i]!;
      first.set(entry.key, entry.before);
    }
    this.#journal.length = Math.min(this.#journal.length, mark);
    // forEach, not for-of: iterating entries made an array per key.
    first.forEach((before, key) => this.#set(key, before));
  }

  /** The net changes since `mark`, one per key, in key order. */
  changesSince(mark: number): Change[] {
    this.#settle();
    return this.#changesSince(mark);
  }

  #changesSince(mark: number): Change[] {
    const before = new Map<string, Held | undefined>();
    for (let i = mark; i < this.#journal.length; i++) {
      const entry = this.#journal[i]!;
      if (!before.has(entry.key)) before.set(entry.key, entry.before);
    }
    const out: Change[] = [];
    // Sorting the map's key strings gives the keys' byte order without turning each key back into
    // a string at every comparison (which cost more than everything else here).
    for (const s of [...before.keys()].sort()) {
      const prev = asBytes(before.get(s));
      const after = this.#bytes(s);
      // Written back to equal bytes (e.g. a weight restored in a fresh encoding) is no change.
      if (prev === after || (prev !== undefined && after !== undefined && bytesEqual(prev, after))) continue;
      out.push({ key: keyBytes(s), before: prev, after });
    }
    return out;
  }

  /** Forgets the journal after `mark`: the changes stay and can no longer be reverted past it. */
  commit(mark: number): void {
    this.#settle();
    this.#journal.length = Math.min(this.#journal.length, mark);
  }

  /**
   * Hides the changes made since `mark` from every caller until `reveal` or `discard`, without
   * undoing them unless a caller comes meanwhile: the first call of any other method undoes them,
   * and `reveal` redoes them. So a block waits for its signatures at no cost when nothing touches
   * the state in between, and no caller ever sees it before its signatures are known good.
   */
  conceal(mark: number): void {
    if (this.#concealed !== null) {
      // A second caller's changes are not left standing: the state goes back to its mark (the
      // first concealment undone, to be redone by its own reveal) before the refusal.
      this.#settle();
      this.#revert(mark);
      throw new Error('changes are concealed already');
    }
    this.#concealed = { mark, undone: null };
  }

  /** The concealed changes stand: redone if a caller had them undone meanwhile, journaled either way. */
  reveal(): void {
    const concealed = this.#concealed;
    this.#concealed = null;
    if (concealed?.undone) this.#applyChanges(concealed.undone, 'redo');
  }

  /** The concealed changes are dropped: the state is as it was at their mark. */
  discard(): void {
    const concealed = this.#concealed;
    this.#concealed = null;
    if (concealed !== null && concealed.undone === null) this.#revert(concealed.mark);
  }

  // Undoes the concealed changes, if any, before a caller touches the state.
  #settle(): void {
    const concealed = this.#concealed;
    if (concealed === null || concealed.undone !== null) return;
    concealed.undone = this.#changesSince(concealed.mark);
    this.#revert(concealed.mark);
  }

  /** Applies changes backwards (undo) or forwards (redo), journaled like any other write. */
  applyChanges(changes: readonly Change[], direction: 'undo' | 'redo'): void {
    this.#settle();
    this.#applyChanges(changes, direction);
  }

  #applyChanges(changes: readonly Change[], direction: 'undo' | 'redo'): void {
    for (const c of changes) {
      const value = direction === 'undo' ? c.before : c.after;
      if (value === undefined) this.#delete(keyString(c.key));
      // The very bytes the state held (never changed in place), so a key put back costs no rehash.
      else this.#put(keyString(c.key), value);
    }
  }

  /** The Merkle root committing to every entry. */
  stateRoot(): Uint8Array {
    this.#settle();
    const keys: string[] = [];
    const values: Uint8Array[] = [];
    this.#dirty.forEach((hashed, s) => {
      const held = this.#values.get(s);
      // Values are never changed in place, so the same object is the same bytes.
      if (held === hashed) return;
      const value = this.#bytes(s, held);
      if (value === undefined) this.#trie.delete(this.#path(s));
      else {
        keys.push(s);
        values.push(value);
      }
    });
    this.#dirty.clear();
    // The changed values hashed in one batch (the trie takes its nodes the same way).
    const valueHashes = sha256Each(values, this.#sha);
    for (let i = 0; i < keys.length; i++) this.#trie.set(this.#path(keys[i]!), valueHashes.subarray(32 * i, 32 * i + 32));
    return this.#trie.root();
  }

  #path(s: string): Uint8Array {
    const cached = this.#paths.get(s);
    if (cached !== undefined) return cached;
    if (this.#paths.size >= PATH_CACHE_MAX) this.#paths.clear();
    const path = this.#sha.hash(keyBytes(s));
    this.#paths.set(s, path);
    return path;
  }

  /** Every entry in key order (for snapshots and storage). */
  entries(): [Uint8Array, Uint8Array][] {
    this.#settle();
    return [...this.#values.keys()].sort().map((s) => [keyBytes(s), this.#bytes(s)!]);
  }

  // ---- typed tables ------------------------------------------------------------------------

  /** The account `id` (all zero when absent). The object is frozen: build a new one to change it. */
  account(id: Uint8Array): Account {
    this.#settle();
    return this.#account(accountKey(id));
  }

  #account(s: string, v: Held | undefined = this.#values.get(s)): Account {
    if (v === undefined) return ZERO_ACCOUNT;
    if (!(v instanceof Uint8Array)) return v;
    const known = this.#accounts.get(s);
    return known !== undefined && known.bytes === v ? known.account : this.#remember(s, v, decode(accountCodec, v));
  }

  #remember(s: string, bytes: Uint8Array, account: Account): Account {
    // Bounded: a pass over a huge state must not keep a second copy of it.
    if (this.#accounts.size >= ACCOUNT_CACHE_MAX) this.#accounts.clear();
    const frozen = Object.freeze(account);
    this.#accounts.set(s, { bytes, account: frozen });
    return frozen;
  }

  setAccount(id: Uint8Array, account: Account): void {
    this.#settle();
    const s = accountKey(id);
    const held = this.#values.get(s);
    const before = this.#account(s, held);
    // Held decoded (a copy, so the caller's object stays its own) and encoded only when its bytes
    // are asked for, by the state root most often: a transfer writes its sender twice and its
    // recipient once, and a block writes its busy accounts many times, each encoded once.
    this.#put(s, Object.freeze({ ...account }), held);
    const weight = weightOf(account);
    if (weight !== weightOf(before)) {
      const k = tableKey(TABLE.weight, id);
      if (weight > 0n) this.#put(k, encode(weightCodec, weight));
      else this.#delete(k);
    }
  }

  /** Accounts with weight, in ascending id order (hex), for producer ranking. */
  weights(): [string, bigint][] {
    this.#settle();
    return [...this.#weights.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** The seed that ranks producers for the next block (32 zero bytes before the first block). */
  producerSeed(): Uint8Array {
    this.#settle();
    return this.#bytes(SEED_KEY) ?? new Uint8Array(32);
  }

  setProducerSeed(seed: Uint8Array): void {
    this.#settle();
    this.#put(SEED_KEY, seed.slice());
  }

  supply(): Supply {
    this.#settle();
    const v = this.#bytes(SUPPLY_KEY);
    return v === undefined ? { emitted: 0n, burned: 0n } : decode(supplyCodec, v);
  }

  setSupply(supply: Supply): void {
    this.#settle();
    this.#put(SUPPLY_KEY, encode(supplyCodec, supply));
  }

  job(id: Uint8Array): Job | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.job, id));
    return v === undefined ? undefined : decode(jobCodec, v);
  }

  setJob(id: Uint8Array, job: Job | undefined): void {
    this.#settle();
    if (job === undefined) this.#delete(tableKey(TABLE.job, id));
    else this.#put(tableKey(TABLE.job, id), encode(jobCodec, job));
  }

  channel(id: Uint8Array): Channel | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.channel, id));
    return v === undefined ? undefined : decode(channelCodec, v);
  }

  setChannel(id: Uint8Array, channel: Channel | undefined): void {
    this.#settle();
    if (channel === undefined) this.#delete(tableKey(TABLE.channel, id));
    else this.#put(tableKey(TABLE.channel, id), encode(channelCodec, channel));
  }

  epoch(cell: Uint8Array, host: Uint8Array): number | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.epoch, cell, host));
    return v === undefined ? undefined : decode(heightCodec, v);
  }

  setEpoch(cell: Uint8Array, host: Uint8Array, epoch: number): void {
    this.#settle();
    this.#put(tableKey(TABLE.epoch, cell, host), encode(heightCodec, epoch));
  }

  name(name: string): NameEntry | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.name, textEncoder.encode(name)));
    return v === undefined ? undefined : decode(nameCodec, v);
  }

  setName(name: string, entry: NameEntry): void {
    this.#settle();
    this.#put(tableKey(TABLE.name, textEncoder.encode(name)), encode(nameCodec, entry));
  }

  /** The names whose entry holds `owner`, lapsed ones included (the caller judges expiry), by name. */
  namesOf(owner: Uint8Array): [string, NameEntry][] {
    this.#settle();
    const names = [...(this.#namesByOwner.get(toHex(owner)) ?? [])].sort();
    return names.map((name) => [name, this.name(name)!]);
  }

  /** Height at which `granter` granted trust to `subject`, if it stands. */
  trust(granter: Uint8Array, subject: Uint8Array): number | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.trust, granter, subject));
    return v === undefined ? undefined : decode(heightCodec, v);
  }

  setTrust(granter: Uint8Array, subject: Uint8Array, height: number | undefined): void {
    this.#settle();
    const k = tableKey(TABLE.trust, granter, subject);
    if (height === undefined) this.#delete(k);
    else this.#put(k, heightBytes(height));
  }

  /** Height at which `issuer` revoked capability `tokenId`, if it did. */
  revoked(issuer: Uint8Array, tokenId: Uint8Array): number | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.revoked, issuer, tokenId));
    return v === undefined ? undefined : decode(heightCodec, v);
  }

  setRevoked(issuer: Uint8Array, tokenId: Uint8Array, height: number): void {
    this.#settle();
    this.#put(tableKey(TABLE.revoked, issuer, tokenId), heightBytes(height));
  }

  /** Height at which `producer` was slashed for equivocating at `at`, if it was. */
  slashed(producer: Uint8Array, at: number): number | undefined {
    this.#settle();
    const v = this.#bytes(tableKey(TABLE.slashed, producer, heightBytes(at)));
    return v === undefined ? undefined : decode(heightCodec, v);
  }

  setSlashed(producer: Uint8Array, at: number, height: number): void {
    this.#settle();
    this.#put(tableKey(TABLE.slashed, producer, heightBytes(at)), heightBytes(height));
  }
}
