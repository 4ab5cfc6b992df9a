/**
 * GET /directory.json and GET /directory.ndjson: the whole directory, streamed a batch of records
 * at a time as the client reads (pull-based, so memory stays flat at any size and a client that
 * stops reading stops the work), with a strong ETag for cheap refreshes. Each record goes out as
 * the bytes the index keeps (search.ts `recordJson`), the same as in a search page: nothing is
 * parsed or written again.
 *
 * The JSON layout: a header line `{"generated":…,"sources":[…],"attribution":{…},"total":N,"records":[`,
 * one record per line, then `]}`. That is the dataset file layout (directory/dataset.ts), so an
 * export can be served again with `mesh directory --data export.json`.
 */
import type { LoadedData } from './data-source.ts';

/** Records per pull: large enough to amortize the call, small enough to stay flat. */
const BATCH = 256;

/** The export's Cache-Control: short, because removals must reach copies soon (spec §1.5). */
export const EXPORT_CACHE_CONTROL = 'public, max-age=300';

const encoder = new TextEncoder();

/** How an export lays out its records: what comes first, after each record (the last one's own), and last. */
interface Layout {
  readonly head: string;
  readonly after: string;
  readonly afterLast: string;
  readonly tail: string;
}

/** The records of `data` in id order, laid out as `layout` says, pulled `BATCH` at a time. */
function recordStream(data: LoadedData, layout: Layout): ReadableStream<Uint8Array> {
  const after = encoder.encode(layout.after);
  const afterLast = encoder.encode(layout.afterLast);
  let position = 0;
  let started = false;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (!started) {
          started = true;
          if (layout.head !== '') {
            controller.enqueue(encoder.encode(layout.head));
            return;
          }
        }
        const index = data.index;
        const first = position;
        const end = Math.min(index.size, position + BATCH);
        const tail = end >= index.size ? encoder.encode(layout.tail) : undefined;
        let length = tail?.length ?? 0;
        for (let p = first; p < end; p++) length += index.recordLength(p) + (p === index.size - 1 ? afterLast : after).length;
        const chunk = new Uint8Array(length);
        let at = 0;
        for (; position < end; position++) {
          at = index.recordInto(position, chunk, at);
          const separator = position === index.size - 1 ? afterLast : after;
          chunk.set(separator, at);
          at += separator.length;
        }
        if (tail !== undefined) chunk.set(tail, at);
        if (length > 0) controller.enqueue(chunk);
        if (tail !== undefined) controller.close();
      },
    },
    { highWaterMark: 1 },
  );
}

/** The streamed body of the JSON export. */
export function exportStream(data: LoadedData): ReadableStream<Uint8Array> {
  const header = {
    generated: data.generated,
    sources: data.sources,
    attribution: data.attribution,
    total: data.index.size,
  };
  return recordStream(data, { head: `${JSON.stringify(header).slice(0, -1)},"records":[\n`, after: ',\n', afterLast: '\n', tail: ']}\n' });
}

/**
 * The body of GET /directory.ndjson: one record a line, each the record's JSON exactly as in the
 * JSON export, for tools that read records one at a time. Every record carries its own sources
 * (URL, licence, retrieval date), so attribution travels with each line; the dataset's notice and
 * use rules are in the JSON export's header and in /api/v1/stats.
 */
export function ndjsonStream(data: LoadedData): ReadableStream<Uint8Array> {
  return recordStream(data, { head: '', after: '\n', afterLast: '\n', tail: '' });
}

/**
 * True when `If-None-Match` names `etag` (or is `*`): the client's copy is current. Comparison is
 * weak, as RFC 9110 §13.1.2 has it for this header, so `W/"x"` matches `"x"`.
 */
export function notModified(request: Request, etag: string): boolean {
  const header = request.headers.get('if-none-match');
  if (header === null) return false;
  if (header.trim() === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque);
}
