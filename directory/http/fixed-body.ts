/**
 * Bodies that never change once made — the statistics of a loaded dataset, the OpenAPI document —
 * kept as bytes with a strong ETag, so a request for them costs a copy, and a client that holds
 * the current one gets 304 without a body.
 */

import { sha256 } from '../../core/crypto/sha256.ts';
import { toHex } from '../../core/encoding/hex.ts';
import { bytesResponse } from '../../core/web/bytes-response.ts';
import { notModified } from './export.ts';

/** A body's bytes (shared: never changed) and its ETag. */
export interface FixedBody {
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** The first 128 bits of the SHA-256 of `bytes`, quoted: it changes exactly when they do. */
  readonly etag: string;
}

/** `text` as a fixed body. */
export function fixedBody(text: string): FixedBody {
  const bytes = new TextEncoder().encode(text);
  return { bytes, etag: `"${toHex(sha256(bytes)).slice(0, 32)}"` };
}

/** The 200 response with `body`, or 304 when the request's If-None-Match names its ETag. */
export function fixedResponse(request: Request, body: FixedBody, contentType: string, cacheControl: string): Response {
  const headers = { etag: body.etag, 'cache-control': cacheControl };
  if (notModified(request, body.etag)) return new Response(null, { status: 304, headers });
  return bytesResponse(body.bytes, { headers: { ...headers, 'content-type': contentType } });
}
