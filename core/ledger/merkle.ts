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
 */
import { sha256 } from '../crypto/sha256.ts';
import { bytesEqual } from '../encoding/bytes.ts';

interface Leaf {
  readonly leaf: true;
  readonly path: Uint8Array;
  valueHash: Uint8Array;
  hash: Uint8Array | null;
}

interface Branch {
  readonly leaf: false;
  readonly bit: number;
  left: TrieNode;
  right: TrieNode;
  hash: Uint8Array | null;
}

type TrieNode = Leaf | Branch;

export const EMPTY_ROOT: Uint8Array = new Uint8Array(32);

function bitAt(path: Uint8Array, bit: number): number {
  return (path[bit >>> 3]! >>> (7 - (bit & 7))) & 1;
}

// The first bit at which two 32-byte paths differ, or -1 if they are equal.
function critBit(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < 32; i++) {
    const x = a[i]! ^ b[i]!;
    if (x !== 0) return i * 8 + Math.clz32(x) - 24;
  }
  return -1;
}

// Byte order of two paths.
function critOrder(a: Uint8Array, b: Uint8Array): number {
  const bit = critBit(a, b);
  return bit < 0 ? 0 : bitAt(a, bit) === 0 ? -1 : 1;
}

const leafBuf = new Uint8Array(65);
const branchBuf = new Uint8Array(66);

function hashOf(node: TrieNode): Uint8Array {
  if (node.hash) return node.hash;
  if (node.leaf) {
    leafBuf[0] = 0;
    leafBuf.set(node.path, 1);
    leafBuf.set(node.valueHash, 33);
    node.hash = sha256(leafBuf);
  } else {
    const left = hashOf(node.left);
    const right = hashOf(node.right);
    branchBuf[0] = 1;
    branchBuf[1] = node.bit;
    branchBuf.set(left, 2);
    branchBuf.set(right, 34);
    node.hash = sha256(branchBuf);
  }
  return node.hash;
}

/** A leaf to build a trie from: a 32-byte key hash and the hash of its value. */
export interface TrieLeaf {
  readonly path: Uint8Array;
  readonly valueHash: Uint8Array;
}

// Builds the subtrie of sorted leaves [lo, hi): the first bit where the first and last paths differ
// is the range's crit bit (they are sorted), and the leaves with a 1 there form the right side.
function buildSorted(leaves: readonly Leaf[], lo: number, hi: number): TrieNode {
  if (hi - lo === 1) return leaves[lo]!;
  const bit = critBit(leaves[lo]!.path, leaves[hi - 1]!.path);
  let a = lo;
  let b = hi - 1;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (bitAt(leaves[mid]!.path, bit) === 0) a = mid + 1;
    else b = mid;
  }
  return { leaf: false, bit, left: buildSorted(leaves, lo, a), right: buildSorted(leaves, a, hi), hash: null };
}

/** A mutable Merkle trie; `root()` rehashes only what changed since the last call. */
export class MerkleTrie {
  #root: TrieNode | null = null;
  #size = 0;

  /**
   * A trie holding `leaves` (distinct paths), built in one pass after sorting: far cheaper than
   * inserting a large state one entry at a time when a node loads it.
   */
  static fromLeaves(leaves: readonly TrieLeaf[]): MerkleTrie {
    const trie = new MerkleTrie();
    if (leaves.length === 0) return trie;
    const nodes: (Leaf & { readonly first: number })[] = leaves.map((l) => {
      if (l.path.length !== 32 || l.valueHash.length !== 32) throw new RangeError('trie paths and value hashes are 32 bytes');
      const p = l.path;
      return { leaf: true, path: p.slice(), valueHash: l.valueHash.slice(), hash: null, first: ((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0 };
    });
    nodes.sort((x, y) => x.first - y.first || critOrder(x.path, y.path));
    for (let i = 1; i < nodes.length; i++) {
      if (critBit(nodes[i - 1]!.path, nodes[i]!.path) < 0) throw new RangeError('trie leaves must have distinct paths');
    }
    trie.#root = buildSorted(nodes, 0, nodes.length);
    trie.#size = nodes.length;
    return trie;
  }
  // The branches `set` passed on its way down, reused by every call. Per trie, so it never keeps
  // another trie's nodes alive.
  readonly #passed: Branch[] = [];

  get size(): number {
    return this.#size;
  }

  /** Sets the value hash stored under a 32-byte key hash. */
  set(path: Uint8Array, valueHash: Uint8Array): void {
    if (path.length !== 32 || valueHash.length !== 32) throw new RangeError('trie paths and value hashes are 32 bytes');
    if (this.#root === null) {
      this.#root = { leaf: true, path: path.slice(), valueHash: valueHash.slice(), hash: null };
      this.#size = 1;
      return;
    }
    // One descent to the leaf closest to `path`, keeping the branches passed: a second descent
    // cost as much again, in a large trie mostly in cache misses.
    const passed = this.#passed;
    passed.length = 0;
    let node: TrieNode = this.#root;
    while (!node.leaf) {
      passed.push(node);
      node = bitAt(path, node.bit) === 0 ? node.left : node.right;
    }
    const crit = critBit(node.path, path);
    if (crit < 0) {
      // Written back unchanged (a block undone and redone): nothing above it needs rehashing.
      if (bytesEqual(node.valueHash, valueHash)) return;
      for (const b of passed) b.hash = null;
      node.valueHash = valueHash.slice();
      node.hash = null;
      return;
    }
    const fresh: Leaf = { leaf: true, path: path.slice(), valueHash: valueHash.slice(), hash: null };
    const goesRight = bitAt(path, crit) === 1;
    // The new branch takes the place of the first node on the way that branches at or after the
    // crit bit; the branches above it are its ancestors, whose hashes change.
    let depth = 0;
    while (depth < passed.length && passed[depth]!.bit < crit) passed[depth++]!.hash = null;
    const parent = depth > 0 ? passed[depth - 1]! : null;
    const current: TrieNode = depth < passed.length ? passed[depth]! : node;
    const branch: Branch = goesRight
      ? { leaf: false, bit: crit, left: current, right: fresh, hash: null }
      : { leaf: false, bit: crit, left: fresh, right: current, hash: null };
    if (parent === null) this.#root = branch;
    else if (bitAt(path, parent.bit) === 0) parent.left = branch;
    else parent.right = branch;
    this.#size++;
  }

  /** Removes a key hash; returns whether it was there. */
  delete(path: Uint8Array): boolean {
    if (this.#root === null) return false;
    let grand: Branch | null = null;
    let parent: Branch | null = null;
    let node: TrieNode = this.#root;
    while (!node.leaf) {
      grand = parent;
      parent = node;
      node = bitAt(path, node.bit) === 0 ? node.left : node.right;
    }
    if (critBit(node.path, path) >= 0) return false;
    this.#size--;
    if (parent === null) {
      this.#root = null;
      return true;
    }
    this.#walk(path, (n) => (n.hash = null));
    const sibling = bitAt(path, parent.bit) === 0 ? parent.right : parent.left;
    if (grand === null) this.#root = sibling;
    else if (bitAt(path, grand.bit) === 0) grand.left = sibling;
    else grand.right = sibling;
    return true;
  }

  /** The root hash of the current set. */
  root(): Uint8Array {
    return this.#root === null ? EMPTY_ROOT : hashOf(this.#root).slice();
  }

  // Visits the branches on the way to `path`.
  #walk(path: Uint8Array, visit: (b: Branch) => void): void {
    let node = this.#root;
    while (node !== null && !node.leaf) {
      visit(node);
      node = bitAt(path, node.bit) === 0 ? node.left : node.right;
    }
  }
}
