/**
 * Request bodies within a byte bound, JSON or raw bytes: the media type is checked first (415),
 * an oversized declared Content-Length is refused before a byte is read, and a body without one is
 * counted as it streams in and refused as soon as it passes the bound (413), so nothing oversized
 * is parsed or held.
 */
import { BodyTooLargeError, readBoundedBody } from '../web/bounded-body.ts';
import { DuplicateMemberError, parseStrictJson } from '../web/strict-json.ts';
import { ApiProblem } from './problem.ts';

function tooLarge(limit: number): ApiProblem {
  return new ApiProblem('too-large', `the request body is over ${limit} bytes`, { limit_bytes: limit });
}

/** The media type of a raw-bytes body. */
export const BYTES_TYPE = 'application/octet-stream';

/** True for `application/json`, with no parameter but an optional `charset=utf-8`. */
function isJsonType(header: string | null): boolean {
  if (header === null) return false;
  const [type, ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((param) => param === 'charset=utf-8' || param === 'charset="utf-8"');
}

/** True for `application/octet-stream` without parameters. */
export function isBytesType(header: string | null): boolean {
  return header !== null && header.trim().toLowerCase() === BYTES_TYPE;
}

async function boundedBytes(request: Request, limit: number): Promise<Uint8Array> {
  try {
    return await readBoundedBody(request, limit);
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw tooLarge(limit);
    throw error;
  }
}

/** The raw bytes of `request`'s body, sent as `application/octet-stream`, at most `limit` of them. */
export async function readBytesBody(request: Request, limit: number): Promise<Uint8Array> {
  if (!isBytesType(request.headers.get('content-type'))) {
    throw new ApiProblem('unsupported-media-type', `the body must be bytes, sent as content-type: ${BYTES_TYPE}`);
  }
  return boundedBytes(request, limit);
}

/**
 * The parsed JSON body of `request`, at most `limit` bytes of UTF-8, read strictly
 * (core/web/strict-json.ts): a member named twice in one object is 400. With `optional`, an empty
 * body is undefined, whatever its content-type says (a route that takes "no body, or {}").
 */
export async function readJsonBody(request: Request, limit: number, optional = false): Promise<unknown> {
  const json = isJsonType(request.headers.get('content-type'));
  if (!json && !optional) {
    throw new ApiProblem('unsupported-media-type', 'the body must be JSON, sent as content-type: application/json');
  }
  const bytes = await boundedBytes(request, limit);
  if (optional && bytes.length === 0) return undefined;
  if (!json) throw new ApiProblem('unsupported-media-type', 'a body must be JSON, sent as content-type: application/json');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiProblem('invalid-body', 'the body is not valid UTF-8');
  }
  try {
    return parseStrictJson(text);
  } catch (error) {
    if (error instanceof DuplicateMemberError) {
      throw new ApiProblem('invalid-body', `${error.path}: given more than once`, { errors: [{ name: error.path, detail: 'given more than once' }] });
    }
    throw new ApiProblem('invalid-body', `the body is not valid JSON: ${(error as Error).message}`);
  }
}
