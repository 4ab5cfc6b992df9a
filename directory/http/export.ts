/**
 * GET /directory.json (and /directory.ndjson, below): the whole directory as one JSON object, streamed a batch of records at a
 * time as the client reads (pull-based, so memory stays flat at any size and a client that stops
 * reading stops the work), with a strong ETag for cheap refreshes.
 *
 * Layout: a header line `{"generated":…,"sources":[…],"attribution":{…},"total":N,"records":[`,
 * one record per line, then `]}`. That is the dataset file layout (directory/dataset.ts), so an
 * export can be served again with `mesh directory --data export.json`.
 */
import { datasetRecordLine } from '../dataset.ts';
import type { LoadedData } from './data-source.ts';

/** Records serialized per pull: large enough to amortize the call, small enough to stay flat. */
const BATCH = 256;

/** The export's Cache-Control: short, because removals must reach copies soon (spec §1.5). */
export const EXPORT_CACHE_CONTROL = 'public, max-age=300';

/** The streamed body of the export. */
export function exportStream(data: LoadedData): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const records = data.index.records()[Symbol.iterator]();
  const header = {
    generated: data.generated,
    sources: data.sources,
    attribution: data.attribution,
    total: data.index.size,
  };
  const headerText = `${JSON.stringify(header).slice(0, -1)},"records":[\n`;
  let started = false;
  let next = records.next();
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(headerText));
          return;
        }
        let text = '';
        for (let n = 0; n < BATCH && !next.done; n++) {
          const record = next.value;
          next = records.next();
          text += `${datasetRecordLine(record)}${next.done ? '' : ','}\n`;
        }
        if (next.done) {
          controller.enqueue(encoder.encode(`${text}]}\n`));
          controller.close();
        } else {
          controller.enqueue(encoder.encode(text));
        }
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * The body of GET /directory.ndjson: one record a line, each the record's JSON exactly as in the
 * JSON export, for tools that read records one at a time. Every record carries its own sources
 * (URL, licence, retrieval date), so attribution travels with each line; the dataset's notice and
 * use rules are in the JSON export's header and in /api/v1/stats. Pulled a batch at a time, as
 * the JSON export is.
 */
export function ndjsonStream(data: LoadedData): ReadableStream<Uint8Array> {
  const newline = new Uint8Array([0x0a]);
  let position = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const end = Math.min(data.index.size, position + BATCH);
        const parts: Uint8Array[] = [];
        let length = 0;
        for (; position < end; position++) {
          const json = data.index.recordJson(position);
          parts.push(json, newline);
          length += json.length + 1;
        }
        const chunk = new Uint8Array(length);
        let at = 0;
        for (const part of parts) {
          chunk.set(part, at);
          at += part.length;
        }
        if (length > 0) controller.enqueue(chunk);
        if (position >= data.index.size) controller.close();
      },
    },
    { highWaterMark: 1 },
  );
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
