/**
 * Request bodies within a bound: refused from the declared Content-Length before a byte is read,
 * and, for a body without one (chunked), refused as soon as the count passes the bound, so
 * nothing oversized is ever parsed or held.
 */
import { concatBytes } from '../../core/encoding/bytes.ts';
import { ProblemError } from './problem.ts';

function tooLarge(limit: number): ProblemError {
  return new ProblemError('too-large', `the request body is over ${limit} bytes`, { limit_bytes: limit });
}

/** Throws the 413 problem when the declared length is over `limit`; a body may still follow without one. */
export function checkDeclaredLength(request: Request, limit: number): void {
  const declared = request.headers.get('content-length');
  if (declared !== null && (!/^[0-9]+$/.test(declared) || Number(declared) > limit)) throw tooLarge(limit);
}

/** The body's bytes, at most `limit` of them; throws the 413 problem beyond. */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  checkDeclaredLength(request, limit);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return concatBytes(...chunks);
}
