import { assert } from 'chai';
import type { MeshError } from '../core/errors.ts';

/** A class of MeshError, whatever its constructor takes (chai's own constructor type). */
type ErrorClass = new (...args: any[]) => MeshError;

/**
 * Asserts that `fn` throws an error of class `cls` with the stable `code` (and, if given, a
 * message matching `message`), and returns it.
 */
export function rejects(fn: () => unknown, cls: ErrorClass, code: string, message?: RegExp): MeshError {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  return expectMeshError(error, cls, code, message);
}

/** `rejects` for a function that returns a promise. */
export async function rejectsAsync(fn: () => Promise<unknown>, cls: ErrorClass, code: string, message?: RegExp): Promise<MeshError> {
  let error: unknown;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  return expectMeshError(error, cls, code, message);
}

function expectMeshError(error: unknown, cls: ErrorClass, code: string, message?: RegExp): MeshError {
  assert.instanceOf(error, cls, `expected ${cls.name} ${code}`);
  const e = error as MeshError;
  assert.equal(e.name, cls.name);
  assert.equal(e.code, code, e.message);
  if (message) assert.match(e.message, message);
  return e;
}
