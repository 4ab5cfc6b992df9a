/**
 * Compressed answers: JSON bodies and the exports go out gzip-encoded when the client's
 * Accept-Encoding accepts gzip, through the web-standard CompressionStream (Node and Deno). The
 * gzip representation has its own strong ETag, the plain tag with `-gzip` appended (RFC 9110
 * §8.8.3: a strong validator changes with the content coding), and an If-None-Match tag matches
 * only the representation it names: a gzip tag a gzip answer, a plain tag a plain answer.
 *
 * No Brotli: CompressionStream('brotli') (Node, Deno) runs at quality 11 with no way to lower it,
 * seconds of CPU per megabyte, and a streamed export is megabytes; a client accepting only br gets
 * the plain body, which RFC 9110 §12.5.3 allows.
 */

export type Encoding = 'gzip';

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
  return acceptEncoding !== null && qualityOf(acceptEncoding, 'gzip') > 0 ? 'gzip' : undefined;
}

/** The strong ETag of the `encoding` representation of the one tagged `etag`. */
export function encodedEtag(etag: string, encoding: Encoding): string {
  return etag.replace(/"$/, `-${encoding}"`);
}

/**
 * The request as the routes see it, which compare If-None-Match with the plain tags: with an
 * encoding, the tags for that encoding turned back into plain tags and every other tag (a plain
 * one, or another encoding's) left out, so it cannot match; `*` stays. Without an encoding, the
 * request as it is (an encoded tag never equals a plain one).
 */
export function plainRequest(request: Request, encoding: Encoding | undefined): Request {
  const header = request.headers.get('if-none-match');
  // Only reads carry validators here; a request with a body is passed on untouched.
  if (encoding === undefined || header === null || (request.method !== 'GET' && request.method !== 'HEAD')) return request;
  const suffix = `-${encoding}"`;
  const plain = header
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag === '*' || tag.endsWith(suffix))
    .map((tag) => (tag === '*' ? tag : `${tag.slice(0, -suffix.length)}"`));
  const headers = new Headers(request.headers);
  if (plain.length === 0) headers.delete('if-none-match');
  else headers.set('if-none-match', plain.join(', '));
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
  if (encoding === undefined || response.status === 204) return withVary(response);
  const headers = new Headers(response.headers);
  headers.append('vary', 'Accept-Encoding');
  const etag = headers.get('etag');
  if (etag !== null) headers.set('etag', encodedEtag(etag, encoding));
  if (response.status === 304) return new Response(null, { status: 304, headers });
  headers.set('content-encoding', encoding);
  headers.delete('content-length');
  const body = response.body?.pipeThrough(new CompressionStream(encoding)) ?? null;
  return new Response(body, { status: response.status, headers });
}

/** `response` with `Vary: Accept-Encoding`: in place (its body untouched), or a copy when its headers are immutable. */
function withVary(response: Response): Response {
  try {
    response.headers.append('vary', 'Accept-Encoding');
    return response;
  } catch {
    const headers = new Headers(response.headers);
    headers.append('vary', 'Accept-Encoding');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}
