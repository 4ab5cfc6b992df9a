/**
 * The suite every host's shared-data loader passes (Node and Deno in `host-node/`, the browser in
 * `host-browser/`): the shared folder with its hash check, the download into the cache against a
 * local server, a corrupted download refused and not cached, and the error when neither works.
 */
import { assert } from 'chai';
import { sha256 } from '../core/crypto/sha256.ts';
import { SHARED_FILES, SharedDataError, type SharedFiles } from '../core/data/shared-data.ts';
import { toHex } from '../core/encoding/hex.ts';
import { rejectsAsync } from './assert.ts';
import { test } from './harness.ts';

export interface SharedDataOptions {
  readonly root?: string;
  readonly cacheDir?: string;
  readonly files?: SharedFiles;
}

export interface SharedDataHost {
  load(name: string, options?: SharedDataOptions): Promise<Uint8Array>;
  /** A shared data folder with nothing in it, as when `../shared/data` is not there. */
  readonly emptyRoot: string;
  /** A new, empty cache. */
  freshCache(): Promise<string>;
  /** A URL on a local server that answers with `text` as its bytes. */
  upstream(text: string): string;
  /** A URL on the local server that answers 404. */
  readonly missing: string;
}

const EPA = 'epa-frs/frs-naics-32591.csv';
const PINNED = 'pinned bytes';
const pinnedHash = toHex(sha256(new TextEncoder().encode(PINNED)));
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

export function sharedDataSuite(label: string, host: SharedDataHost): void {
  const only = (upstream: string, hash = pinnedHash): SharedFiles => ({ 'test/pinned.txt': { upstream, sha256: hash } });

  test(`${label}: reads a file from the shared data folder and checks its SHA-256`, async () => {
    // No upstream to fall back on: the bytes can only come from the shared folder.
    const files = { [EPA]: { ...SHARED_FILES[EPA], upstream: host.missing } };
    const bytes = await host.load(EPA, { files, cacheDir: await host.freshCache() });
    assert.equal(bytes.length, 1_189_438);
  });

  test(`${label}: a file in the shared folder whose SHA-256 is not the pinned one is refused`, async () => {
    const files = { [EPA]: { upstream: host.missing, sha256: '0'.repeat(64) } };
    const cacheDir = await host.freshCache();
    await rejectsAsync(() => host.load(EPA, { files, cacheDir }), SharedDataError, 'hash-mismatch', /epa-frs\/frs-naics-32591\.csv has SHA-256 62bb2cc1/);
  });

  test(`${label}: without the shared folder, downloads once from the upstream into the cache`, async () => {
    const cacheDir = await host.freshCache();
    const first = await host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(host.upstream(PINNED)) });
    assert.equal(text(first), PINNED);
    // The upstream is gone now: the cached copy serves.
    const again = await host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(host.missing) });
    assert.equal(text(again), PINNED);
  });

  test(`${label}: a corrupted download is refused and not cached`, async () => {
    const cacheDir = await host.freshCache();
    const tampered = host.upstream('tampered bytes');
    await rejectsAsync(
      () => host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(tampered) }),
      SharedDataError,
      'hash-mismatch',
      new RegExp(`from ${tampered.replace(/[.?*+^$[\]\\(){}|-]/g, '\\$&')} has SHA-256 [0-9a-f]{64}, not the pinned ${pinnedHash}`),
    );
    await rejectsAsync(() => host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(host.missing) }), SharedDataError, 'unavailable');
    const good = await host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(host.upstream(PINNED)) });
    assert.equal(text(good), PINNED);
  });

  test(`${label}: neither the shared folder nor the upstream: an error naming both`, async () => {
    const cacheDir = await host.freshCache();
    const error = await rejectsAsync(
      () => host.load('test/pinned.txt', { root: host.emptyRoot, cacheDir, files: only(host.missing) }),
      SharedDataError,
      'unavailable',
    );
    for (const place of [host.emptyRoot, host.missing, cacheDir]) assert.include(error.message, place);
    await rejectsAsync(() => host.load('no/such-file', { cacheDir }), SharedDataError, 'unknown-file', /epa-frs\/frs-naics-32591\.csv/);
  });
}
