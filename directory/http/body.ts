/**
 * Request bodies within a bound: refused from the declared Content-Length before a byte is read,
 * and, for a body without one (chunked), refused as soon as the count passes the bound, so
 * nothing oversized is ever parsed or held.
 */
import { BodyTooLargeError, declaresTooLarge, readBoundedBody } from '../../core/web/bounded-body.ts';
import { ProblemError } from './problem.ts';

function tooLarge(limit: number): ProblemError {
  return new ProblemError('too-large', `the request body is over ${limit} bytes`, { limit_bytes: limit });
}

/** Throws the 413 problem when the declared length is over `limit`; a body may still follow without one. */
export function checkDeclaredLength(request: Request, limit: number): void {
  if (declaresTooLarge(request, limit)) throw tooLarge(limit);
}

/** The body's bytes, at most `limit` of them; throws the 413 problem beyond. */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  try {
    return await readBoundedBody(request, limit);
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw tooLarge(limit);
    throw error;
  }
}
