/**
 * The storage port: bytes to bytes with atomic batches and ordered range reads. LevelDB (Node),
 * IndexedDB (browser) and memory (tests) implement it; `test/kv-compliance.ts` is the suite every
 * implementation must pass.
 */

export type BatchOp = { readonly type: 'put'; readonly key: Uint8Array; readonly value: Uint8Array } | { readonly type: 'del'; readonly key: Uint8Array };

/** A key range: `gte` inclusive, `lt` exclusive; `reverse` walks from the top; `limit` caps entries. */
export interface Range {
  readonly gte?: Uint8Array;
  readonly lt?: Uint8Array;
  readonly reverse?: boolean;
  readonly limit?: number;
}

export interface KeyValueStore {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  /** Applies every operation or none, in order (a later op on the same key wins). */
  batch(ops: readonly BatchOp[]): Promise<void>;
  /** A batch to add operations to over time: nothing of it is applied before its `write`. */
  stage(): StagedBatch;
  /** Entries in key order (byte-wise), within `range`. */
  entries(range?: Range): AsyncIterable<readonly [Uint8Array, Uint8Array]>;
  close(): Promise<void>;
}

/**
 * Operations added over time and applied by `write` as one batch: all or none, in the order added
 * (a later op on a key wins). For a batch built piecemeal ahead of the moment it is written, or
 * never (a reorganisation prepared while its branch is fetched): a store may take the operations
 * in as they come, so that `write` has little left to do. Spent by `write` or `discard`.
 */
export interface StagedBatch {
  /** Adds operations after those added before; TypeError for a bad one, as `batch`. */
  add(ops: readonly BatchOp[]): void;
  write(): Promise<void>;
  /** Drops what was added; nothing is applied. */
  discard(): void;
}

/** A StagedBatch that gathers the operations and hands them to `store.batch` on `write`. */
export function gatheredBatch(store: KeyValueStore): StagedBatch {
  let gathered: BatchOp[] | null = [];
  const open = (): BatchOp[] => {
    if (gathered === null) throw new Error('the staged batch was written or discarded');
    return gathered;
  };
  return {
    add(ops) {
      const into = open();
      checkBatch(ops);
      for (const op of ops) into.push(op);
    },
    write() {
      const ops = open();
      gathered = null;
      return store.batch(ops);
    },
    discard() {
      gathered = null;
    },
  };
}

/**
 * Throws TypeError unless every operation is a put or del of Uint8Array keys (and values): every
 * store checks the whole batch before it applies any of it.
 */
export function checkBatch(ops: readonly BatchOp[]): void {
  for (const op of ops) {
    if (!(op.key instanceof Uint8Array) || (op.type === 'put' && !(op.value instanceof Uint8Array))) {
      throw new TypeError('batch keys and values must be Uint8Array');
    }
    if (op.type !== 'put' && op.type !== 'del') throw new TypeError(`unknown batch operation ${JSON.stringify(op)}`);
  }
}

/** The smallest key above every key that starts with `prefix` (for `lt` of a prefix range). */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  const end = prefix.slice();
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff: there is no upper bound of the same length; an empty array means "to the end".
  return new Uint8Array(0);
}

/** The range of keys that start with `prefix`. */
export function prefixRange(prefix: Uint8Array, options: { reverse?: boolean; limit?: number } = {}): Range {
  const lt = prefixEnd(prefix);
  return { gte: prefix, ...(lt.length > 0 ? { lt } : {}), ...options };
}

/**
 * A store in memory: a sorted array of keys, so range reads need no sort. Keys and values are held
 * as one-byte strings (a char per byte, so string order is byte order): a byte array costs three
 * heap objects and about 200 bytes besides its bytes, a one-byte string one object and 16 bytes, and
 * a simulated mesh holds a chain per node (docs/sim.md, "What it costs"). Values are copied in and
 * out, as a real store would, so callers cannot change stored bytes by accident.
 */
// Batches of more ops than this are merged into a MemoryStore rather than spliced in op by op.
const MERGE_OVER = 256;

// Bytes per String.fromCharCode call: under every engine's limit on arguments.
const CHARS_PER_CALL = 8_192;

function bytesToChars(bytes: Uint8Array): string {
  if (bytes.length <= CHARS_PER_CALL) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += CHARS_PER_CALL)
    parts.push(String.fromCharCode.apply(null, bytes.subarray(i, i + CHARS_PER_CALL) as unknown as number[]));
  return parts.join('');
}

function charsToBytes(chars: string): Uint8Array {
  const bytes = new Uint8Array(chars.length);
  for (let i = 0; i < chars.length; i++) bytes[i] = chars.charCodeAt(i);
  return bytes;
}

// V8 hashes a string longer than this by its length alone: longer ones are filed under their ends.
const HASHED_CHARS = 16_383;
const END_CHARS = 8_000;

/**
 * One copy of each string it has been given. The stores of a simulated mesh share one: every node
 * writes the same blocks and mostly the same entries, which are then held once instead of once per
 * node (docs/sim.md, "What it costs"). It only grows: for a run, not for a long-lived node.
 */
export class SharedStrings {
  readonly #held = new Map<string, string>();

  /** The copy held of `text`, which becomes it when none is (or another is filed where it would be). */
  intern(text: string): string {
    const key = text.length <= HASHED_CHARS ? text : `${text.length}:${text.slice(0, END_CHARS)}${text.slice(-END_CHARS)}`;
    const held = this.#held.get(key);
    if (held === undefined) this.#held.set(key, text);
    else if (held === text) return held;
    return text;
  }

  get size(): number {
    return this.#held.size;
  }
}

export class MemoryStore implements KeyValueStore {
  #keys: string[] = [];
  #values: string[] = [];
  #closed = false;
  readonly #shared: SharedStrings | null;

  constructor(options: { readonly shared?: SharedStrings } = {}) {
    this.#shared = options.shared ?? null;
  }

  // What a key or value is held as: its chars, or the shared copy of them.
  #held(bytes: Uint8Array): string {
    const chars = bytesToChars(bytes);
    return this.#shared === null ? chars : this.#shared.intern(chars);
  }

  get size(): number {
    return this.#keys.length;
  }

  // Index of the first key ≥ `key`.
  #lowerBound(key: string): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #check(): void {
    if (this.#closed) throw new Error('store is closed');
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.#check();
    const chars = bytesToChars(key);
    const i = this.#lowerBound(chars);
    return this.#keys[i] === chars ? charsToBytes(this.#values[i]!) : undefined;
  }

  async batch(ops: readonly BatchOp[]): Promise<void> {
    this.#check();
    checkBatch(ops);
    // Each op in place costs a splice of the whole key list: a large batch (a deep reorganisation
    // writes hundreds of thousands of entries) is merged into the list in one pass instead.
    if (ops.length > MERGE_OVER) return this.#merge(ops);
    for (const op of ops) {
      const key = bytesToChars(op.key);
      const i = this.#lowerBound(key);
      const exists = this.#keys[i] === key;
      if (op.type === 'put') {
        const value = this.#held(op.value);
        if (exists) this.#values[i] = value;
        else {
          this.#keys.splice(i, 0, this.#shared === null ? key : this.#shared.intern(key));
          this.#values.splice(i, 0, value);
        }
      } else if (exists) {
        this.#keys.splice(i, 1);
        this.#values.splice(i, 1);
      }
    }
  }

  // Applies `ops` (the last op on a key wins) by merging them, sorted, with the sorted key list.
  #merge(ops: readonly BatchOp[]): void {
    const last = new Map<string, string | null>();
    for (const op of ops) {
      const key = op.type === 'put' ? this.#held(op.key) : bytesToChars(op.key);
      last.delete(key);
      last.set(key, op.type === 'put' ? this.#held(op.value) : null);
    }
    const sorted = [...last.keys()].sort();
    const keys: string[] = [];
    const values: string[] = [];
    let i = 0;
    for (const key of sorted) {
      while (i < this.#keys.length && this.#keys[i]! < key) {
        keys.push(this.#keys[i]!);
        values.push(this.#values[i]!);
        i++;
      }
      if (i < this.#keys.length && this.#keys[i] === key) i++;
      const value = last.get(key)!;
      if (value !== null) {
        keys.push(key);
        values.push(value);
      }
    }
    for (; i < this.#keys.length; i++) {
      keys.push(this.#keys[i]!);
      values.push(this.#values[i]!);
    }
    this.#keys = keys;
    this.#values = values;
  }

  stage(): StagedBatch {
    return gatheredBatch(this);
  }

  async *entries(range: Range = {}): AsyncIterable<readonly [Uint8Array, Uint8Array]> {
    this.#check();
    const start = range.gte ? this.#lowerBound(bytesToChars(range.gte)) : 0;
    const end = range.lt ? this.#lowerBound(bytesToChars(range.lt)) : this.#keys.length;
    const limit = range.limit ?? Infinity;
    // Snapshot the slice: a batch during iteration must not shift what is being read.
    const keys = this.#keys.slice(start, Math.max(start, end));
    const values = this.#values.slice(start, Math.max(start, end));
    if (range.reverse) {
      keys.reverse();
      values.reverse();
    }
    for (let i = 0; i < keys.length && i < limit; i++) yield [charsToBytes(keys[i]!), charsToBytes(values[i]!)] as const;
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}
