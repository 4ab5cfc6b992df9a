/**
 * The directory's dataset file: one JSON object `{generated, sources, records}`, written with one
 * record per line so that a file too large for one string (1,000,000 records is about 600 MB, past
 * V8's string limit) can still be read record by record (`readDataset`), and so that a re-import
 * that changes one record changes one line. Web-standard APIs only: runs on Node, Deno and in a page.
 */
import { array, object, type StructError, validate } from 'superstruct';
import { concatBytes } from '../core/encoding/bytes.ts';
import { MeshError } from '../core/errors.ts';
import {
  type CategoryEvidence,
  type FactoryRecord,
  FactoryRecordStruct,
  IsoDateStruct,
  isFactoryRecord,
  isIsoDate,
  type SourceRef,
  SourceRefStruct,
} from './record.ts';

/** A whole directory: its records sorted by id, with the dataset-level sources they came from. */
export interface Dataset {
  /** YYYY-MM-DD: the date of the data (the latest retrieval among its sources), not of the file. */
  generated: string;
  /** One entry per source dataset (the FRS export, a Wikidata query, an exhibitor list). */
  sources: SourceRef[];
  /** Sorted by id, ids unique. */
  records: FactoryRecord[];
}

/**
 * A dataset file or record that does not follow the format. `code` names the condition:
 * `not-json`, `not-utf8`, `bad-shape`, `bad-record`, `duplicate-id`, `truncated`.
 */
export class InvalidDatasetError extends MeshError {}

const HeaderStruct = object({ generated: IsoDateStruct, sources: array(SourceRefStruct) });

function describeStructError(error: StructError): string {
  const path = error.path.length > 0 ? error.path.join('.') : '(top)';
  return `${path}: ${error.message}`;
}

function checkHeader(value: unknown): { generated: string; sources: SourceRef[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidDatasetError('bad-shape', 'a dataset must be a JSON object {generated, sources, records}');
  }
  const { generated, sources } = value as Record<string, unknown>;
  const [error, header] = validate({ generated, sources }, HeaderStruct);
  if (error) throw new InvalidDatasetError('bad-shape', `dataset ${describeStructError(error)}`);
  return header;
}

/** Validates one record; `where` names it in the error (its position in the file). */
export function checkRecord(value: unknown, where: string): FactoryRecord {
  if (isFactoryRecord(value)) return value;
  const [error, record] = validate(value, FactoryRecordStruct);
  if (error) {
    const id = typeof (value as { id?: unknown } | null)?.id === 'string' ? ` (${(value as { id: string }).id})` : '';
    throw new InvalidDatasetError('bad-record', `${where}${id}: ${describeStructError(error)}`);
  }
  return record;
}

function compareIds(a: FactoryRecord, b: FactoryRecord): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

// Values that repeat across records (a country, a source's name and licence, a date, the same
// piece of evidence) are stored once: a million records then cost about half the memory. Records
// are never changed after loading, so sharing is safe; empty arrays share one frozen instance.
const EMPTY: never[] = Object.freeze([]) as never[];

class Compactor {
  readonly #strings = new Map<string, string>();
  readonly #evidence = new Map<string, CategoryEvidence>();

  #intern<T extends string | null>(value: T): T {
    if (value === null) return value;
    const had = this.#strings.get(value);
    if (had !== undefined) return had as T;
    this.#strings.set(value, value);
    return value;
  }

  record(r: FactoryRecord): FactoryRecord {
    return {
      id: r.id,
      name: r.name,
      country: this.#intern(r.country),
      region: this.#intern(r.region),
      city: this.#intern(r.city),
      address: r.address,
      postal_code: r.postal_code,
      categories: r.categories.length === 0 ? EMPTY : r.categories,
      category_evidence: r.category_evidence.length === 0 ? EMPTY : r.category_evidence.map((e) => this.#sharedEvidence(e)),
      contacts: r.contacts.length === 0 ? EMPTY : r.contacts.map((c) => ({ kind: this.#intern(c.kind), value: c.value, source: this.#intern(c.source) })),
      sources: r.sources.map((s) => ({
        key: this.#intern(s.key),
        name: this.#intern(s.name),
        url: s.url,
        licence: this.#intern(s.licence),
        retrieved: this.#intern(s.retrieved),
      })),
      verification: this.#intern(r.verification),
      first_seen: this.#intern(r.first_seen),
      updated: this.#intern(r.updated),
    };
  }

  #sharedEvidence(e: CategoryEvidence): CategoryEvidence {
    const key = `${e.category}\u0000${e.source}\u0000${e.property}\u0000${e.value}\u0000${e.label}\u0000${e.strength}`;
    let had = this.#evidence.get(key);
    if (had === undefined) {
      had = { ...e };
      this.#evidence.set(key, had);
    }
    return had;
  }
}

/** Sorts by id (in place, only when needed) and refuses duplicates. */
function finish(header: { generated: string; sources: SourceRef[] }, records: FactoryRecord[]): Dataset {
  let sorted = true;
  for (let i = 1; i < records.length && sorted; i++) sorted = records[i - 1]!.id < records[i]!.id;
  if (!sorted) records.sort(compareIds);
  for (let i = 1; i < records.length; i++) {
    if (records[i - 1]!.id === records[i]!.id) {
      throw new InvalidDatasetError('duplicate-id', `the dataset holds ${records[i]!.id} more than once`);
    }
  }
  return { generated: header.generated, sources: header.sources, records };
}

/**
 * Parses and validates a dataset file's text. Throws InvalidDatasetError (never returns a partly
 * checked dataset). Records out of order are sorted; a repeated id is refused.
 */
export function parseDataset(text: string): Dataset {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidDatasetError('not-json', `the dataset is not JSON: ${(error as Error).message}`);
  }
  const header = checkHeader(value);
  const records = (value as { records?: unknown }).records;
  if (!Array.isArray(records)) throw new InvalidDatasetError('bad-shape', 'dataset records: expected an array');
  const compactor = new Compactor();
  return finish(
    header,
    records.map((r, i) => compactor.record(checkRecord(r, `record ${i}`))),
  );
}

// The line layout `serializeDataset` writes: a header line that opens the records array, one
// record per line (each but the last followed by a comma), and a closing line.
const RECORDS_OPENING = ',"records":[';
const CLOSING = ']}';

/**
 * The lines of a byte stream, without their newlines, a chunk's worth at a time (one await per
 * chunk, not per line). Lines are split on the bytes (0x0A never occurs inside a UTF-8 sequence)
 * and are views into the chunks: a line is decoded only when it is read, and its bytes can be kept
 * without encoding it again.
 */
async function* byteLines(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array[]> {
  const reader = body.getReader();
  let carry: Uint8Array | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const batch: Uint8Array[] = [];
    let start = 0;
    for (let end = value.indexOf(0x0a); end >= 0; end = value.indexOf(0x0a, start)) {
      const piece = value.subarray(start, end);
      batch.push(carry === undefined ? piece : concatBytes(carry, piece));
      carry = undefined;
      start = end + 1;
    }
    if (start < value.length) carry = carry === undefined ? value.slice(start) : concatBytes(carry, value.subarray(start));
    if (batch.length > 0) yield batch;
  }
  if (carry !== undefined && carry.length > 0) yield [carry];
}

/** Decodes lines; only the first may open with a byte order mark, as when the whole file is decoded. */
class LineDecoder {
  readonly #first = new TextDecoder('utf-8', { fatal: true });
  readonly #rest = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  #started = false;

  decode(line: Uint8Array): string {
    const decoder = this.#started ? this.#rest : this.#first;
    this.#started = true;
    try {
      return decoder.decode(line);
    } catch {
      throw new InvalidDatasetError('not-utf8', 'the dataset file is not UTF-8');
    }
  }
}

/** A dataset's date and sources: the file's first line. */
export type DatasetHeader = Pick<Dataset, 'generated' | 'sources'>;

/** One record as read, with its JSON in UTF-8 (see `recordJson`). */
export interface DatasetEntry {
  record: FactoryRecord;
  /**
   * The record's JSON, beginning with its id, with no whitespace between tokens and no escape
   * `JSON.stringify` would not write: `JSON.stringify(JSON.parse(json))` gives these bytes back.
   * Often a view into a chunk of the stream as read: the reader owns those, nothing else writes to
   * them, so the bytes can be kept as they are (the index keeps them).
   */
  json: Uint8Array;
}

/** A dataset being read: its header at once, its records as they arrive (each validated). */
export interface DatasetStream {
  header: DatasetHeader;
  records: AsyncIterable<DatasetEntry>;
}

const encoder = new TextEncoder();

/**
 * The length of `JSON.stringify(value)` for a value made of strings that need no escape, nulls,
 * arrays and objects (a record read from text without a backslash); -1 for anything else.
 */
function plainJsonLength(value: unknown): number {
  if (value === null) return 4;
  if (typeof value === 'string') return value.length + 2;
  if (typeof value !== 'object') return -1;
  let length = 2;
  let items = 0;
  if (Array.isArray(value)) {
    for (const item of value) {
      const n = plainJsonLength(item);
      if (n < 0) return -1;
      length += n;
      items++;
    }
  } else {
    for (const key in value) {
      const n = plainJsonLength((value as Record<string, unknown>)[key]);
      if (n < 0) return -1;
      length += key.length + 3 + n;
      items++;
    }
  }
  return length + Math.max(0, items - 1);
}

/**
 * True when `text`, the JSON of `record` as read, is what `JSON.stringify` writes for it. Without
 * a backslash every string is spelt as it reads, so the two can differ only by whitespace between
 * tokens or a repeated member (which parses to one): both make the text longer, and comparing
 * lengths finds them without writing the record out. A line with an escape is compared with
 * `JSON.stringify` itself (few are).
 */
function isStringified(text: string, record: FactoryRecord): boolean {
  if (text.includes('\\')) return JSON.stringify(record) === text;
  return plainJsonLength(record) === text.length;
}

/**
 * The bytes a record is kept as (see DatasetEntry.json). A line as our writers put it — id first,
 * then name, already in `JSON.stringify` form — is kept as the file has it; one spelt otherwise
 * but in that order is written again with `JSON.stringify` (keeping its member order); any other
 * is written in the documented member order.
 */
function recordJson(record: FactoryRecord, text: string, bytes: Uint8Array): Uint8Array {
  if (!text.startsWith(`{"id":${JSON.stringify(record.id)},"name":`)) return encoder.encode(datasetRecordLine(record));
  return isStringified(text, record) ? bytes : encoder.encode(JSON.stringify(record));
}

// Unicode whitespace that String#trimEnd removes and a line may end with (a CRLF file's \r most often).
function trailingSpaceBytes(line: string, trimmed: string): number | undefined {
  const tail = line.slice(trimmed.length);
  // ASCII whitespace is one byte a character; any other needs encoding to count.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is all of ASCII, control characters too.
  return /^[\x00-\x7f]*$/.test(tail) ? tail.length : undefined;
}

async function* lineRecords(batches: AsyncGenerator<Uint8Array[]>, decoder: LineDecoder): AsyncGenerator<DatasetEntry> {
  let lineNumber = 1;
  let closed = false;
  let expectMore = true;
  let count = 0;
  for await (const batch of batches) {
    for (const bytes of batch) {
      lineNumber++;
      const raw = decoder.decode(bytes);
      const line = raw.trimEnd();
      if (closed) {
        if (line.length > 0) throw new InvalidDatasetError('not-json', `line ${lineNumber}: text after the end of the dataset`);
        continue;
      }
      if (line === CLOSING && (count === 0 || !expectMore)) {
        closed = true;
        continue;
      }
      if (!expectMore) throw new InvalidDatasetError('not-json', `line ${lineNumber}: expected "," after the previous record`);
      expectMore = line.endsWith(',');
      const json = expectMore ? line.slice(0, -1) : line;
      let value: unknown;
      try {
        value = JSON.parse(json);
      } catch (error) {
        throw new InvalidDatasetError('not-json', `line ${lineNumber} of the dataset is not JSON: ${(error as Error).message}`);
      }
      count++;
      const record = checkRecord(value, `line ${lineNumber}`);
      const trimmed = trailingSpaceBytes(raw, line);
      const jsonBytes = trimmed === undefined ? encoder.encode(json) : bytes.subarray(0, bytes.length - trimmed - (expectMore ? 1 : 0));
      yield { record, json: recordJson(record, json, jsonBytes) };
    }
  }
  if (!closed) throw new InvalidDatasetError('truncated', `the dataset ends at line ${lineNumber} without closing its records`);
}

async function* entriesOf(records: readonly FactoryRecord[]): AsyncGenerator<DatasetEntry> {
  for (const record of records) yield { record, json: encoder.encode(datasetRecordLine(record)) };
}

/**
 * Opens a dataset from a byte stream (a file, a fetch body) for reading record by record, without
 * holding the whole text: a file in the layout `serializeDataset` writes is parsed a line at a
 * time; any other layout of the same JSON is parsed whole first. Records come in file order;
 * errors (InvalidDatasetError) surface while iterating.
 */
export async function streamDataset(body: ReadableStream<Uint8Array>): Promise<DatasetStream> {
  const batches = byteLines(body);
  const decoder = new LineDecoder();
  let pending: Uint8Array[] = [];
  while (pending.length === 0) {
    const next = await batches.next();
    if (next.done) throw new InvalidDatasetError('not-json', 'the dataset file is empty');
    pending = next.value;
  }
  const headerLine = decoder.decode(pending[0]!);
  const rest = (async function* (): AsyncGenerator<Uint8Array[]> {
    yield pending.slice(1);
    yield* batches;
  })();
  if (!headerLine.endsWith(RECORDS_OPENING)) {
    // Not our layout: gather the rest and parse it whole.
    const parts = [headerLine];
    for await (const batch of rest) for (const line of batch) parts.push(decoder.decode(line));
    const dataset = parseDataset(parts.join('\n'));
    return { header: { generated: dataset.generated, sources: dataset.sources }, records: entriesOf(dataset.records) };
  }
  let header: DatasetHeader;
  try {
    header = checkHeader(JSON.parse(`${headerLine.slice(0, -RECORDS_OPENING.length)}}`));
  } catch (error) {
    if (error instanceof InvalidDatasetError) throw error;
    throw new InvalidDatasetError('not-json', `line 1 of the dataset is not JSON: ${(error as Error).message}`);
  }
  return { header, records: lineRecords(rest, decoder) };
}

/** Reads a whole dataset from a byte stream (see `streamDataset`); sorts it and refuses repeated ids. */
export async function readDataset(body: ReadableStream<Uint8Array>): Promise<Dataset> {
  const { header, records } = await streamDataset(body);
  const list: FactoryRecord[] = [];
  const compactor = new Compactor();
  for await (const { record } of records) list.push(compactor.record(record));
  return finish(header, list);
}

/** A record with its members in the documented order, so equal records serialize to equal bytes. */
export function canonicalRecord(r: FactoryRecord): FactoryRecord {
  return {
    id: r.id,
    name: r.name,
    country: r.country,
    region: r.region,
    city: r.city,
    address: r.address,
    postal_code: r.postal_code,
    categories: [...r.categories],
    category_evidence: r.category_evidence.map((e) => ({
      category: e.category,
      source: e.source,
      property: e.property,
      value: e.value,
      label: e.label,
      strength: e.strength,
    })),
    contacts: r.contacts.map((c) => ({ kind: c.kind, value: c.value, source: c.source })),
    sources: r.sources.map(canonicalSource),
    verification: r.verification,
    first_seen: r.first_seen,
    updated: r.updated,
  };
}

function canonicalSource(s: SourceRef): SourceRef {
  return { key: s.key, name: s.name, url: s.url, licence: s.licence, retrieved: s.retrieved };
}

/** The header line of a dataset file in the line layout (for writers that stream records). */
export function datasetHeaderLine(generated: string, sources: readonly SourceRef[]): string {
  if (!isIsoDate(generated)) throw new InvalidDatasetError('bad-shape', `generated must be YYYY-MM-DD, got ${generated}`);
  return `{"generated":${JSON.stringify(generated)},"sources":${JSON.stringify(sources.map(canonicalSource))}${RECORDS_OPENING}`;
}

/** One record's line (without the separating comma). */
export function datasetRecordLine(record: FactoryRecord): string {
  return JSON.stringify(canonicalRecord(record));
}

/**
 * The dataset file's text, in pieces (header, one line per record, closing), for writing a large
 * dataset without building one string. Records must already be sorted by id.
 */
export function* datasetChunks(dataset: Dataset): Generator<string> {
  yield `${datasetHeaderLine(dataset.generated, dataset.sources)}\n`;
  const last = dataset.records.length - 1;
  for (let i = 0; i <= last; i++) yield `${datasetRecordLine(dataset.records[i]!)}${i < last ? ',' : ''}\n`;
  yield `${CLOSING}\n`;
}

/** The dataset file's text: byte-identical for equal datasets. */
export function serializeDataset(dataset: Dataset): string {
  return [...datasetChunks(dataset)].join('');
}
