/**
 * The prebuilt index file: a DirectoryIndex written out whole, so that a server starts by reading
 * one file instead of parsing, checking and indexing a million records (seconds, not tens of
 * seconds). It is made from the dataset file and written beside it (`directory.json.index`) by
 * `mesh directory import` and by a server that finds it missing or stale; it names the SHA-256 of
 * the dataset's bytes it was made from, and is used only for a dataset with that hash (which is
 * also the export's ETag, so the tag does not change with how the index was obtained).
 *
 * Layout: the 8 bytes `MESHDIX1`, a little-endian uint32 N, four zero bytes, the file's length as
 * a little-endian float64 (so a reader of a stream can make room for it at once), N bytes of JSON
 * (the header below), then the sections it lists, each a typed array's bytes at an offset that is a multiple of 8
 * from the start of the file. Typed arrays are read in place: the file's bytes are the index's
 * memory, with nothing parsed but the header. Web-standard APIs only.
 */
import { type DatasetHeader, InvalidDatasetError } from './dataset.ts';
import { type IndexParts, TABLES } from './index-builder.ts';
import { PostingsTable } from './postings.ts';
import { RecordStore } from './record-store.ts';

const MAGIC = new TextEncoder().encode('MESHDIX1');
/** Bumped whenever the layout or the meaning of a section changes: an older file is rebuilt. */
export const INDEX_FILE_VERSION = 2;

type ArrayKind = 'u8' | 'i32' | 'u32';
type Section = { readonly name: string; readonly kind: ArrayKind; readonly offset: number; readonly length: number };

interface FileHeader {
  readonly version: number;
  /** The SHA-256 of the dataset file's bytes, in hex. */
  readonly datasetSha256: string;
  readonly generated: string;
  readonly sources: DatasetHeader['sources'];
  readonly size: number;
  /** Each table's keys, sorted. */
  readonly keys: Record<string, readonly string[]>;
  readonly sections: readonly Section[];
}

/** A read index file. */
export interface IndexFile {
  readonly datasetSha256: string;
  readonly header: DatasetHeader;
  readonly parts: IndexParts;
}

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function kindOf(array: Uint8Array | Int32Array | Uint32Array): ArrayKind {
  return array instanceof Uint8Array ? 'u8' : array instanceof Int32Array ? 'i32' : 'u32';
}

const pad8 = (n: number): number => Math.ceil(n / 8) * 8;

/** True when `bytes` begin as an index file does. */
export function isIndexFile(bytes: Uint8Array): boolean {
  if (bytes.length < MAGIC.length) return false;
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) return false;
  return true;
}

/**
 * The index file's bytes, in pieces to write one after the other (no copy of the index is made).
 * `datasetSha256` is the hex SHA-256 of the dataset file the index was made from.
 */
export function indexFileChunks(parts: IndexParts, header: DatasetHeader, datasetSha256: string): Uint8Array[] {
  if (!littleEndian) throw new RangeError('index files are written on little-endian machines only');
  const arrays: [string, Uint8Array | Int32Array | Uint32Array][] = [
    ['store.tokens', parts.store.parts.tokens],
    ['store.tokenStarts', parts.store.parts.tokenStarts],
    ['store.data', parts.store.parts.data],
    ['store.starts', parts.store.parts.starts],
    ['store.lengths', parts.store.parts.lengths],
    ['nameHash', parts.nameHash],
  ];
  for (const name of TABLES) {
    arrays.push([`${name}.offsets`, parts[name].parts.offsets], [`${name}.positions`, parts[name].parts.positions]);
  }
  // Offsets from the end of the header's padding; made absolute once the header's length is known.
  const sections: Section[] = [];
  let at = 0;
  for (const [name, array] of arrays) {
    sections.push({ name, kind: kindOf(array), offset: at, length: array.length });
    at = pad8(at + array.byteLength);
  }
  const keys = Object.fromEntries(TABLES.map((name) => [name, parts[name].keys]));
  const describe = (base: number): string =>
    JSON.stringify({
      version: INDEX_FILE_VERSION,
      datasetSha256,
      generated: header.generated,
      sources: header.sources,
      size: parts.size,
      keys,
      sections: sections.map((s) => ({ ...s, offset: s.offset + base })),
    } satisfies FileHeader);
  // The header's length depends on the offsets it holds, which depend on its length: settle it.
  let base = pad8(FIXED + new TextEncoder().encode(describe(0)).length);
  let json = new TextEncoder().encode(describe(base));
  while (pad8(FIXED + json.length) !== base) {
    base = pad8(FIXED + json.length);
    json = new TextEncoder().encode(describe(base));
  }
  const head = new Uint8Array(base);
  head.set(MAGIC, 0);
  const view = new DataView(head.buffer);
  view.setUint32(8, json.length, true);
  view.setFloat64(16, base + at, true);
  head.set(json, FIXED);
  const chunks: Uint8Array[] = [head];
  let written = base;
  for (let i = 0; i < arrays.length; i++) {
    const array = arrays[i]![1];
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    chunks.push(bytes);
    written += bytes.length;
    const padding = pad8(written) - written;
    if (padding > 0) {
      chunks.push(new Uint8Array(padding));
      written += padding;
    }
  }
  return chunks;
}

function bad(message: string): InvalidDatasetError {
  return new InvalidDatasetError('bad-index', `the index file ${message}`);
}

/** The bytes before an index file's header: magic, header length, file length. */
export const INDEX_FILE_FIXED_BYTES = 24;
const FIXED = INDEX_FILE_FIXED_BYTES;

/** The length of an index file and of its head (up to its sections) from its first 24 bytes; undefined when they are not an index file's. */
export function indexFileLengths(first: Uint8Array): { head: number; file: number } | undefined {
  if (first.length < FIXED || !isIndexFile(first)) return undefined;
  const view = new DataView(first.buffer, first.byteOffset, FIXED);
  return { head: FIXED + view.getUint32(8, true), file: view.getFloat64(16, true) };
}

/**
 * Reads an index file whole from `bytes` (kept: the index's typed arrays are views of them, so
 * they must not change). Throws InvalidDatasetError (`bad-index`) for anything that is not an
 * index file of this version, or whose sections do not fit.
 */
export function readIndexFile(bytes: Uint8Array): IndexFile {
  if (!littleEndian) throw bad('needs a little-endian machine');
  const lengths = indexFileLengths(bytes);
  if (lengths === undefined) throw bad('does not begin as one');
  if (lengths.file !== bytes.length || lengths.head > bytes.length) throw bad(`is ${bytes.length} bytes long, not ${lengths.file}`);
  const headLength = lengths.head;
  // Typed arrays need their offsets aligned: a file read into an unaligned view is copied once.
  if (bytes.byteOffset % 8 !== 0) bytes = bytes.slice();
  let header: FileHeader;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(FIXED, headLength))) as FileHeader;
  } catch {
    throw bad('has a header that is not JSON');
  }
  if (header.version !== INDEX_FILE_VERSION) throw bad(`is version ${header.version}, not ${INDEX_FILE_VERSION}`);
  const sections = new Map<string, Uint8Array | Int32Array | Uint32Array>();
  for (const s of header.sections) {
    const width = s.kind === 'u8' ? 1 : 4;
    if (!Number.isSafeInteger(s.offset) || s.offset % 8 !== 0 || s.offset + s.length * width > bytes.length) throw bad(`section ${s.name} does not fit`);
    const at = bytes.byteOffset + s.offset;
    sections.set(
      s.name,
      s.kind === 'u8'
        ? new Uint8Array(bytes.buffer, at, s.length)
        : s.kind === 'i32'
          ? new Int32Array(bytes.buffer, at, s.length)
          : new Uint32Array(bytes.buffer, at, s.length),
    );
  }
  const section = <T>(name: string, type: new (...args: never[]) => T): T => {
    const array = sections.get(name);
    if (!(array instanceof type)) throw bad(`lacks section ${name}`);
    return array;
  };
  try {
    const store = new RecordStore({
      tokens: section('store.tokens', Uint8Array),
      tokenStarts: section('store.tokenStarts', Int32Array),
      data: section('store.data', Uint8Array),
      starts: section('store.starts', Int32Array),
      lengths: section('store.lengths', Int32Array),
    });
    const nameHash = section('nameHash', Uint32Array);
    if (store.size !== header.size || nameHash.length !== header.size) throw bad('holds a different number of records than it says');
    const tables = Object.fromEntries(
      TABLES.map((name) => [
        name,
        new PostingsTable({
          keys: header.keys[name] ?? [],
          offsets: section(`${name}.offsets`, Uint32Array),
          positions: section(`${name}.positions`, Int32Array),
        }),
      ]),
    ) as Record<(typeof TABLES)[number], PostingsTable>;
    return {
      datasetSha256: header.datasetSha256,
      header: { generated: header.generated, sources: header.sources },
      parts: { size: header.size, store, nameHash, ...tables },
    };
  } catch (error) {
    if (error instanceof InvalidDatasetError) throw error;
    throw bad(`is inconsistent: ${(error as Error).message}`);
  }
}
