/**
 * Reading a request body within a byte bound, for every fetch-style service of the project: an
 * oversized declared Content-Length is refused before a byte is read, and a body without one is
 * counted as it streams in and refused as soon as it passes the bound, so nothing oversized is
 * parsed or held. Each service turns the refusal into its own 413 problem.
 */
import { concatBytes } from '../encoding/bytes.ts';
import { MeshError } from '../errors.ts';

/** The body is over its bound (`limit` bytes). */
export class BodyTooLargeError extends MeshError {
  readonly limit: number;

  constructor(limit: number) {
    super('too-large', `the request body is over ${limit} bytes`);
    this.limit = limit;
  }
}

/** True when the request declares a Content-Length over `limit` (or one that is not a number). */
export function declaresTooLarge(request: Request, limit: number): boolean {
  const declared = request.headers.get('content-length');
  return declared !== null && (!/^[0-9]+$/.test(declared) || Number(declared) > limit);
}

/** The body's bytes, at most `limit` of them; throws BodyTooLargeError beyond (and stops the sender). */
export async function readBoundedBody(request: Request, limit: number): Promise<Uint8Array> {
  if (declaresTooLarge(request, limit)) throw new BodyTooLargeError(limit);
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
      throw new BodyTooLargeError(limit);
    }
    chunks.push(value);
  }
  return concatBytes(...chunks);
}
