/**
 * Submission ids and tokens. The id names the submission in its status URL; the token proves the
 * reader holds the receipt. Both are random (128 and 256 bits); only the token's SHA-256 is
 * stored, so a copy of the store cannot read anyone's status, and a presented token is checked
 * by comparing hashes in constant time.
 */
import { toHex } from '../../core/encoding/hex.ts';

/** 32 lowercase hex characters from 16 random bytes. */
export function newSubmissionId(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(16)));
}

/** 43 base64url characters from 32 random bytes. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** SHA-256 of the token's UTF-8 bytes, lowercase hex. */
export async function hashToken(token: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token));
  return toHex(new Uint8Array(digest));
}

/** Equality of two strings whose time depends on their length only, never on where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** True when `token` is the one whose hash is `storedHash`. */
export async function tokenMatches(token: string, storedHash: string): Promise<boolean> {
  return constantTimeEqual(await hashToken(token), storedHash);
}
