/**
 * The state commitment: a Merkle crit-bit (PATRICIA) trie over 32-byte key hashes.
 *
 * Its shape depends only on the set of keys, never on the order they arrived in, so undoing a block
 * and applying it again (or reorganising away and back) gives the identical root. Only branches
 * where keys diverge exist, so a key sits at depth ≈ log2(size) and changing an entry rehashes
 * that many nodes, whatever the total size.
 *
 * Hashes (H = SHA-256):
 *   empty trie  = 32 zero bytes
 *   leaf        = H(0x00 ‖ key hash ‖ value hash)
 *   branch      = H(0x01 ‖ crit bit (u8) ‖ left ‖ right)   left: keys with a 0 at the crit bit
 *
 * Nodes live in typed arrays indexed by number, not as objects: a block rehashes thousands of
 * nodes, and as objects (three small Uint8Arrays each) walking and hashing them cost as much as
 * the hashing itself, in allocations and cache misses. A node reference is a branch's index (≥ 0)
 * or, for leaf n, ~n (< 0). Changed nodes are rehashed level by level, each level in one
 * `sha256Batch` call.
 */
import { coreSha256, type Sha256Hasher } from '../crypto/sha256.ts';

export const EMPTY_ROOT: Uint8Array = new Uint8Array(32);

// The reference of no node (the empty trie's root); never a valid child.
const NO_NODE = 0x7fffffff;
// Trie nodes hashed per `sha256Batch` call: bounds the scratch buffers of a first root over millions.
const BATCH = 2048;
const LEAF_BYTES = 65;
const BRANCH_BYTES = 66;

function bitAt(path: Uint8Array, bit: number): number {
  return (path[bit >>> 3]! >>> (7 - (bit & 7))) & 1;
}

// The first bit at which the 32 bytes of `a` at `at` and the path `b` differ, or -1 if equal.
function critBit(a: Uint8Array, at: number, b: Uint8Array, bt: number): number {
  for (let i = 0; i < 32; i++) {
    const x = a[at + i]! ^ b[bt + i]!;
    if (x !== 0) return i * 8 + Math.clz32(x) - 24;
  }
  return -1;
}

function copy32(from: Uint8Array, at: number, to: Uint8Array, tt: number): void {
  for (let i = 0; i < 32; i++) to[tt + i] = from[at + i]!;
}

// copy32 a word at a time: rehashing copies three hashes per node, and byte by byte that was a
// sixth of a block's state root.
function copyWords(from: DataView, at: number, to: DataView, tt: number): void {
  for (let i = 0; i < 32; i += 4) to.setInt32(tt + i, from.getInt32(at + i, true), true);
}

const viewOf = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

function grow<T extends Uint8Array | Int32Array>(array: T, length: number): T {
  if (array.length >= length) return array;
  const bigger = new (array.constructor as new (n: number) => T)(Math.max(length, array.length * 2));
  bigger.set(array);
  return bigger;
}

/** A leaf to build a trie from: a 32-byte key hash and the hash of its value. */
export interface TrieLeaf {
  readonly path: Uint8Array;
  readonly valueHash: Uint8Array;
}

/** A mutable Merkle trie; `root()` rehashes only what changed since the last call. */
export class MerkleTrie {
  #root = NO_NODE;
  #size = 0;
  // Leaves: key hash, value hash and node hash (32 bytes each, at 32 n), whether the hash is current.
  #paths = new Uint8Array(0);
  #values = new Uint8Array(0);
  #leafHashes = new Uint8Array(0);
  // DataViews of the pools copied from when rehashing, kept in step with them by `#reserve`.
  #pathsView = viewOf(this.#paths);
  #valuesView = viewOf(this.#values);
  #leafHashesView = viewOf(this.#leafHashes);
  #branchHashesView = viewOf(new Uint8Array(0));
  #leafClean = new Uint8Array(0);
  #leafCount = 0;
  readonly #leafFree: number[] = [];
  // Branches: crit bit, children, node hash (at 32 n), whether the hash is current.
  #bits = new Uint8Array(0);
  #left = new Int32Array(0);
  #right = new Int32Array(0);
  #branchHashes = new Uint8Array(0);
  #branchClean = new Uint8Array(0);
  #branchCount = 0;
  readonly #branchFree: number[] = [];
  // The branches `set` and `delete` passed on their way down (a crit-bit trie is at most 256
  // deep), reused by every call: an array emptied and refilled each call cost more than the descent.
  readonly #passed = new Int32Array(257);
  // Nodes to rehash, by level (leaves at 0, a branch one above its highest changed child).
  readonly #levels: number[][] = [];
  // Preimages and digests of a batch, kept for the next root (a root after one change hashes a
  // node per level, and allocating these per call cost more than that).
  #preimages = new Uint8Array(0);
  #preimagesView = viewOf(this.#preimages);
  #digests = new Uint8Array(0);
  #digestsView = viewOf(this.#digests);
  readonly #ends: number[] = [];
  readonly #sha: Sha256Hasher;

  /** An empty trie whose nodes `sha` hashes (its batch). */
  constructor(sha: Sha256Hasher = coreSha256) {
    this.#sha = sha;
  }

  /**
   * A trie holding `leaves` (distinct paths), built in one pass after sorting: far cheaper than
   * inserting a large state one entry at a time when a node loads it.
   */
  static fromLeaves(leaves: readonly TrieLeaf[], sha: Sha256Hasher = coreSha256): MerkleTrie {
    const trie = new MerkleTrie(sha);
    if (leaves.length === 0) return trie;
    const sorted = leaves.map((l) => {
      if (l.path.length !== 32 || l.valueHash.length !== 32) throw new RangeError('trie paths and value hashes are 32 bytes');
      const p = l.path;
      return { leaf: l, first: ((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0 };
    });
    sorted.sort((x, y) => x.first - y.first || order(x.leaf.path, y.leaf.path));
    for (let i = 1; i < sorted.length; i++) {
      if (critBit(sorted[i - 1]!.leaf.path, 0, sorted[i]!.leaf.path, 0) < 0) throw new RangeError('trie leaves must have distinct paths');
    }
    trie.#reserve(sorted.length, sorted.length - 1);
    for (const { leaf } of sorted) trie.#newLeaf(leaf.path, leaf.valueHash);
    trie.#root = trie.#buildSorted(0, sorted.length);
    trie.#size = sorted.length;
    return trie;
  }

  get size(): number {
    return this.#size;
  }

  /** Sets the value hash stored under a 32-byte key hash. */
  set(path: Uint8Array, valueHash: Uint8Array): void {
    if (path.length !== 32 || valueHash.length !== 32) throw new RangeError('trie paths and value hashes are 32 bytes');
    if (this.#root === NO_NODE) {
      this.#root = ~this.#newLeaf(path, valueHash);
      this.#size = 1;
      return;
    }
    // One descent to the leaf closest to `path`, keeping the branches passed.
    const passed = this.#passed;
    let passedCount = 0;
    const bits = this.#bits;
    let node = this.#root;
    while (node >= 0) {
      passed[passedCount++] = node;
      node = bitAt(path, bits[node]!) === 0 ? this.#left[node]! : this.#right[node]!;
    }
    const leaf = ~node;
    const crit = critBit(this.#paths, 32 * leaf, path, 0);
    if (crit < 0) {
      // Written back unchanged (a block undone and redone): nothing above it needs rehashing.
      if (critBit(this.#values, 32 * leaf, valueHash, 0) < 0) return;
      for (let i = 0; i < passedCount; i++) this.#branchClean[passed[i]!] = 0;
      copy32(valueHash, 0, this.#values, 32 * leaf);
      this.#leafClean[leaf] = 0;
      return;
    }
    const fresh = ~this.#newLeaf(path, valueHash);
    const goesRight = bitAt(path, crit) === 1;
    // The new branch takes the place of the first node on the way that branches at or after the
    // crit bit; the branches above it are its ancestors, whose hashes change.
    let depth = 0;
    while (depth < passedCount && this.#bits[passed[depth]!]! < crit) this.#branchClean[passed[depth++]!] = 0;
    const parent = depth > 0 ? passed[depth - 1]! : NO_NODE;
    const current = depth < passedCount ? passed[depth]! : node;
    const branch = goesRight ? this.#newBranch(crit, current, fresh) : this.#newBranch(crit, fresh, current);
    this.#replaceChild(parent, path, branch);
    this.#size++;
  }

  /** Removes a key hash; returns whether it was there. */
  delete(path: Uint8Array): boolean {
    if (this.#root === NO_NODE) return false;
    const passed = this.#passed;
    let passedCount = 0;
    let node = this.#root;
    while (node >= 0) {
      passed[passedCount++] = node;
      node = bitAt(path, this.#bits[node]!) === 0 ? this.#left[node]! : this.#right[node]!;
    }
    const leaf = ~node;
    if (critBit(this.#paths, 32 * leaf, path, 0) >= 0) return false;
    this.#size--;
    this.#leafFree.push(leaf);
    if (passedCount === 0) {
      this.#root = NO_NODE;
      return true;
    }
    for (let i = 0; i < passedCount; i++) this.#branchClean[passed[i]!] = 0;
    const parent = passed[passedCount - 1]!;
    const grand = passedCount > 1 ? passed[passedCount - 2]! : NO_NODE;
    const sibling = bitAt(path, this.#bits[parent]!) === 0 ? this.#right[parent]! : this.#left[parent]!;
    this.#replaceChild(grand, path, sibling);
    this.#branchFree.push(parent);
    return true;
  }

  /** The root hash of the current set. */
  root(): Uint8Array {
    if (this.#root === NO_NODE) return EMPTY_ROOT;
    this.#rehash();
    const r = this.#root;
    return r < 0 ? this.#leafHashes.slice(32 * ~r, 32 * ~r + 32) : this.#branchHashes.slice(32 * r, 32 * r + 32);
  }

  // Points `parent`'s child on the side of `path` (or the root, for NO_NODE) at `node`.
  #replaceChild(parent: number, path: Uint8Array, node: number): void {
    if (parent === NO_NODE) this.#root = node;
    else if (bitAt(path, this.#bits[parent]!) === 0) this.#left[parent] = node;
    else this.#right[parent] = node;
  }

  #reserve(leaves: number, branches: number): void {
    this.#paths = grow(this.#paths, 32 * leaves);
    this.#values = grow(this.#values, 32 * leaves);
    this.#leafHashes = grow(this.#leafHashes, 32 * leaves);
    this.#leafClean = grow(this.#leafClean, leaves);
    this.#bits = grow(this.#bits, branches);
    this.#left = grow(this.#left, branches);
    this.#right = grow(this.#right, branches);
    this.#branchHashes = grow(this.#branchHashes, 32 * branches);
    this.#branchClean = grow(this.#branchClean, branches);
    this.#pathsView = viewOf(this.#paths);
    this.#valuesView = viewOf(this.#values);
    this.#leafHashesView = viewOf(this.#leafHashes);
    this.#branchHashesView = viewOf(this.#branchHashes);
  }

  // A new leaf's index (not its reference), its hash not yet computed.
  #newLeaf(path: Uint8Array, valueHash: Uint8Array): number {
    let n = this.#leafFree.pop();
    if (n === undefined) {
      n = this.#leafCount++;
      if (n >= this.#leafClean.length) this.#reserve(n + 1, 0);
    }
    copy32(path, 0, this.#paths, 32 * n);
    copy32(valueHash, 0, this.#values, 32 * n);
    this.#leafClean[n] = 0;
    return n;
  }

  #newBranch(bit: number, left: number, right: number): number {
    let n = this.#branchFree.pop();
    if (n === undefined) {
      n = this.#branchCount++;
      if (n >= this.#branchClean.length) this.#reserve(0, n + 1);
    }
    this.#bits[n] = bit;
    this.#left[n] = left;
    this.#right[n] = right;
    this.#branchClean[n] = 0;
    return n;
  }

  // Builds the subtrie of the sorted leaves [lo, hi) (leaf n is the n-th in order): the first bit
  // where the first and last paths differ is the range's crit bit, and the leaves with a 1 there
  // form the right side.
  #buildSorted(lo: number, hi: number): number {
    if (hi - lo === 1) return ~lo;
    const paths = this.#paths;
    const bit = critBit(paths, 32 * lo, paths, 32 * (hi - 1));
    const byte = bit >>> 3;
    const mask = 0x80 >>> (bit & 7);
    let a = lo;
    let b = hi - 1;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if ((paths[32 * mid + byte]! & mask) === 0) a = mid + 1;
      else b = mid;
    }
    return this.#newBranch(bit, this.#buildSorted(lo, a), this.#buildSorted(a, hi));
  }

  // Rehashes every node whose hash is not current: groups them by level, then hashes each level
  // (whose nodes depend only on levels below) in batches.
  #rehash(): void {
    const levels = this.#levels;
    const top = this.#collect(this.#root);
    if (top < 0) return;
    const ends = this.#ends;
    for (let level = 0; level <= top; level++) {
      const nodes = levels[level]!;
      const bytes = level === 0 ? LEAF_BYTES : BRANCH_BYTES;
      for (let from = 0; from < nodes.length; from += BATCH) {
        const count = Math.min(BATCH, nodes.length - from);
        if (this.#digests.length < 32 * count) {
          this.#preimages = new Uint8Array(BRANCH_BYTES * count);
          this.#digests = new Uint8Array(32 * count);
          this.#preimagesView = viewOf(this.#preimages);
          this.#digestsView = viewOf(this.#digests);
        }
        const preimages = this.#preimagesView;
        const digestsView = this.#digestsView;
        ends.length = count;
        for (let i = 0; i < count; i++) {
          ends[i] = bytes * (i + 1);
          if (level === 0) this.#leafPreimage(nodes[from + i]!, preimages, bytes * i);
          else this.#branchPreimage(nodes[from + i]!, preimages, bytes * i);
        }
        this.#sha.batch(this.#preimages, ends, this.#digests);
        const hashes = level === 0 ? this.#leafHashesView : this.#branchHashesView;
        const clean = level === 0 ? this.#leafClean : this.#branchClean;
        for (let i = 0; i < count; i++) {
          const n = nodes[from + i]!;
          copyWords(digestsView, 32 * i, hashes, 32 * n);
          clean[n] = 1;
        }
      }
      nodes.length = 0;
    }
  }

  // Files every node under `node` whose hash is not current under its level; returns the level of
  // `node`, or -1 if its hash is current.
  #collect(node: number): number {
    let level: number;
    if (node < 0) {
      if (this.#leafClean[~node] === 1) return -1;
      level = 0;
      node = ~node;
    } else {
      if (this.#branchClean[node] === 1) return -1;
      level = Math.max(this.#collect(this.#left[node]!), this.#collect(this.#right[node]!), 0) + 1;
    }
    const levels = this.#levels;
    while (levels.length <= level) levels.push([]);
    levels[level]!.push(node);
    return level;
  }

  #leafPreimage(n: number, out: DataView, at: number): void {
    out.setUint8(at, 0);
    copyWords(this.#pathsView, 32 * n, out, at + 1);
    copyWords(this.#valuesView, 32 * n, out, at + 33);
  }

  #branchPreimage(n: number, out: DataView, at: number): void {
    out.setUint8(at, 1);
    out.setUint8(at + 1, this.#bits[n]!);
    this.#copyHash(this.#left[n]!, out, at + 2);
    this.#copyHash(this.#right[n]!, out, at + 34);
  }

  #copyHash(node: number, out: DataView, at: number): void {
    if (node < 0) copyWords(this.#leafHashesView, 32 * ~node, out, at);
    else copyWords(this.#branchHashesView, 32 * node, out, at);
  }
}

// Byte order of two distinct paths.
function order(a: Uint8Array, b: Uint8Array): number {
  const bit = critBit(a, 0, b, 0);
  return bit < 0 ? 0 : bitAt(a, bit) === 0 ? -1 : 1;
}
