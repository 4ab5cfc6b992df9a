/**
 * The node's bootstrap list: `--bootstrap` entries, then the lines of `<data-dir>/bootstrap`, each a
 * multiaddr naming its peer (`/ip4/…/tcp/…/p2p/<peer id>`) or a `/dnsaddr/<name>` (with or without
 * `/p2p/<peer id>`) whose `_dnsaddr.<name>` TXT records (`dnsaddr=<multiaddr>`) list the peers, as
 * libp2p's bootstrap lists do (docs/network.md, "Finding peers").
 */
import { Resolver } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { peerIdFromString } from '@libp2p/peer-id';
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { messageOf } from '../core/errors.ts';
import { parseBootstrapAddress } from './p2p.ts';

/** The bootstrap file's name in the data directory. */
export const BOOTSTRAP_FILE = 'bootstrap';

/** A TXT lookup: the records of `name`, each as the strings it holds (node:dns's `resolveTxt`). */
export type TxtLookup = (name: string) => Promise<string[][]>;

/** `/dnsaddr` names inside names followed at most this deep, and addresses taken from one entry at most. */
const MAX_DNSADDR_DEPTH = 4;
const MAX_DNSADDR_ADDRESSES = 64;

/** A line of the bootstrap file that is not a bootstrap entry: names the file and the line. */
export class BootstrapFileError extends Error {
  override readonly name = 'BootstrapFileError';
}

const dnsaddrOf = (ma: Multiaddr): string | undefined => ma.getComponents().find((c) => c.name === 'dnsaddr')?.value;
const peerOf = (ma: Multiaddr): string | undefined => ma.getComponents().findLast((c) => c.name === 'p2p')?.value;

/**
 * Checks one bootstrap entry: a multiaddr naming an Ed25519 peer, or a `/dnsaddr/<name>` (a peer it
 * names must be Ed25519 too). Throws RangeError saying what is wrong.
 */
export function parseBootstrapEntry(text: string): Multiaddr {
  let ma: Multiaddr;
  try {
    ma = multiaddr(text);
  } catch (error) {
    throw new RangeError(`${JSON.stringify(text)} is not a multiaddr: ${messageOf(error)}`);
  }
  if (dnsaddrOf(ma) === undefined) return parseBootstrapAddress(text);
  const id = peerOf(ma);
  if (id !== undefined && peerIdFromString(id).type !== 'Ed25519') throw new RangeError(`bootstrap address ${text} does not name an Ed25519 peer`);
  return ma;
}

/**
 * The entries of a bootstrap file's text: one multiaddr a line, `#` starting a comment, blank lines
 * skipped. A bad line throws BootstrapFileError naming `path` and the line's number.
 */
export function parseBootstrapFile(text: string, path: string): string[] {
  const entries: string[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const entry = line.replace(/#.*/, '').trim();
    if (entry === '') continue;
    try {
      parseBootstrapEntry(entry);
    } catch (error) {
      throw new BootstrapFileError(`${path} line ${index + 1}: ${messageOf(error)}`);
    }
    entries.push(entry);
  }
  return entries;
}

/** The entries of `<dataDir>/bootstrap`, none when there is no such file. */
export async function readBootstrapFile(dataDir: string): Promise<string[]> {
  const path = join(dataDir, BOOTSTRAP_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return [];
    throw new BootstrapFileError(`cannot read ${path}: ${messageOf(error)}`);
  }
  return parseBootstrapFile(text, path);
}

/** node:dns's TXT lookup, through the system's resolvers. */
export const systemTxtLookup: TxtLookup = (name) => new Resolver().resolveTxt(name);

/**
 * The dialable addresses of the entries: entries without `/dnsaddr` as they are, each `/dnsaddr`
 * entry replaced by the addresses its TXT records list (names in them followed, at most
 * MAX_DNSADDR_DEPTH deep), only those naming a peer, and only the entry's peer where it names one.
 * A name that cannot be resolved is reported to `failed` and gives nothing.
 */
export async function resolveBootstrap(entries: readonly string[], lookup: TxtLookup, failed: (entry: string, reason: string) => void): Promise<string[]> {
  const out: string[] = [];
  for (const entry of entries) {
    const ma = multiaddr(entry);
    if (dnsaddrOf(ma) === undefined) {
      out.push(entry);
      continue;
    }
    try {
      const found = await resolveDnsaddr(ma, lookup, 0);
      if (found.length === 0) failed(entry, 'its TXT records list no address with /p2p/<peer id>');
      out.push(...found.slice(0, MAX_DNSADDR_ADDRESSES));
    } catch (error) {
      failed(entry, messageOf(error));
    }
  }
  return [...new Set(out)];
}

async function resolveDnsaddr(ma: Multiaddr, lookup: TxtLookup, depth: number): Promise<string[]> {
  const name = dnsaddrOf(ma);
  if (name === undefined) return peerOf(ma) === undefined ? [] : [ma.toString()];
  if (depth >= MAX_DNSADDR_DEPTH) throw new RangeError(`/dnsaddr names nested more than ${MAX_DNSADDR_DEPTH} deep`);
  const wanted = peerOf(ma);
  const out: string[] = [];
  for (const record of await lookup(`_dnsaddr.${name}`)) {
    const text = record.join('');
    if (!text.startsWith('dnsaddr=')) continue;
    let found: Multiaddr;
    try {
      found = multiaddr(text.slice('dnsaddr='.length));
    } catch {
      continue;
    }
    if (wanted !== undefined && peerOf(found) !== wanted) continue;
    out.push(...(await resolveDnsaddr(found, lookup, depth + 1)));
    if (out.length >= MAX_DNSADDR_ADDRESSES) break;
  }
  return out.filter((text) => {
    try {
      parseBootstrapAddress(text);
      return true;
    } catch {
      return false;
    }
  });
}
