/**
 * Compressed answers: JSON bodies and the exports go out as gzip or Brotli, as the client's
 * Accept-Encoding asks, through the web-standard CompressionStream, which Node and Deno both
 * have ('gzip'; 'brotli' in both, outside the standard's list, so it is probed). Each encoding
 * is its own representation with its own strong ETag, the plain tag with `-gzip` or `-br`
 * appended (RFC 9110 §8.8.3: a strong validator changes with the content coding), and an
 * If-None-Match holding such a tag is read back as the plain one for the same encoding only.
 *
 * On a tie (`gzip, deflate, br`, what browsers send) gzip is chosen: Node's CompressionStream
 * runs Brotli at quality 11, some sixty times gzip's time on the export, far too slow to stream.
 * A client that prefers br by q-value, or accepts only br, gets br.
 */

export type Encoding = 'gzip' | 'br';

const STREAM_FORMAT: Record<Encoding, string> = { gzip: 'gzip', br: 'brotli' };

function supported(format: string): boolean {
  try {
    new CompressionStream(format as CompressionFormat);
    return true;
  } catch {
    return false;
  }
}

const BROTLI = supported('brotli');

/** Media types compressed: JSON, problem details and NDJSON (pages and the OpenAPI document are JSON too). */
const COMPRESSIBLE = /^application\/(json|problem\+json|x-ndjson)\b/;

/** The q-value Accept-Encoding gives `coding` (or `*`), 0 when it gives none. */
function qualityOf(header: string, coding: string): number {
  let star = 0;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    const value = q === undefined ? 1 : Math.min(1, Number(q) || 0);
    if (name.trim() === coding) return value;
    if (name.trim() === '*') star = value;
  }
  return star;
}

/** The encoding to answer in, or undefined for none. */
export function chooseEncoding(acceptEncoding: string | null): Encoding | undefined {
  if (acceptEncoding === null) return undefined;
  const gzip = qualityOf(acceptEncoding, 'gzip');
  const br = BROTLI ? qualityOf(acceptEncoding, 'br') : 0;
  if (br > gzip) return 'br';
  return gzip > 0 ? 'gzip' : undefined;
}

/** The strong ETag of the `encoding` representation of the one tagged `etag`. */
export function encodedEtag(etag: string, encoding: Encoding): string {
  return etag.replace(/"$/, `-${encoding}"`);
}

/**
 * The request as the routes see it: the tags of If-None-Match given for `encoding` turned back
 * into the plain tags the routes compare with. Tags of another encoding stay as they are, so they
 * never match.
 */
export function plainRequest(request: Request, encoding: Encoding): Request {
  const header = request.headers.get('if-none-match');
  // Only reads carry validators here; a request with a body is passed on untouched.
  if (header === null || (request.method !== 'GET' && request.method !== 'HEAD')) return request;
  const suffix = `-${encoding}"`;
  const plain = header
    .split(',')
    .map((tag) => (tag.trim().endsWith(suffix) ? tag.trim().slice(0, -suffix.length) + '"' : tag.trim()))
    .join(', ');
  const headers = new Headers(request.headers);
  headers.set('if-none-match', plain);
  return new Request(request.url, { method: request.method, headers });
}

/**
 * `response` in `encoding` when it is a compressible body (or a HEAD or 304 of one), with its
 * ETag for that encoding; `Vary: Accept-Encoding` on every compressible answer, so caches keep
 * the encodings apart.
 */
export function encodeResponse(response: Response, encoding: Encoding | undefined): Response {
  const type = response.headers.get('content-type') ?? '';
  const compressible = COMPRESSIBLE.test(type) || (response.status === 304 && response.headers.has('etag'));
  if (!compressible || response.headers.has('content-encoding')) return response;
  const headers = new Headers(response.headers);
  headers.append('vary', 'Accept-Encoding');
  if (encoding === undefined || response.status === 204) return new Response(response.body, { status: response.status, headers });
  const etag = headers.get('etag');
  if (etag !== null) headers.set('etag', encodedEtag(etag, encoding));
  if (response.status === 304) return new Response(null, { status: 304, headers });
  headers.set('content-encoding', encoding);
  headers.delete('content-length');
  const body = response.body?.pipeThrough(new CompressionStream(STREAM_FORMAT[encoding] as CompressionFormat)) ?? null;
  return new Response(body, { status: response.status, headers });
}
