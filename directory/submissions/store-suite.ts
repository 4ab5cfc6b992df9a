/**
 * The contract every submission store keeps, run against each implementation: memory (every
 * runtime), files (Node), Deno KV (Deno).
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { type StoredSubmission, SubmissionExistsError, type SubmissionStore } from './store.ts';
import { newSubmissionId } from './token.ts';

/** A fresh store. */
export interface StoreUnderTest {
  readonly store: SubmissionStore;
  /** Removes what the test created. */
  readonly cleanup?: () => Promise<void>;
}

function sample(overrides: Partial<StoredSubmission> = {}): StoredSubmission {
  return {
    id: newSubmissionId(),
    token_sha256: 'ab'.repeat(32),
    kind: 'correction',
    record_id: 'wd-Q4321',
    company: 'Société Mécanique',
    email: 'contact@smb.example',
    message: 'New address: 1 rue de la Paix',
    status: 'received',
    received: '2025-06-02T12:00:00.000Z',
    ...overrides,
  };
}

/** Registers the store tests; `label` prefixes each name. */
export function storeSuite(label: string, open: () => Promise<StoreUnderTest>): void {
  async function withStore(fn: (s: StoreUnderTest) => Promise<void>): Promise<void> {
    const s = await open();
    try {
      await fn(s);
    } finally {
      await s.store.close();
      await s.cleanup?.();
    }
  }

  test(`${label}: what is put is got back, field for field`, () =>
    withStore(async ({ store }) => {
      const a = sample();
      const b = sample({ kind: 'join', record_id: null, message: '' });
      await store.put(a);
      await store.put(b);
      assert.deepEqual(await store.get(a.id), a);
      assert.deepEqual(await store.get(b.id), b);
    }));

  test(`${label}: an unknown id is undefined`, () =>
    withStore(async ({ store }) => {
      assert.isUndefined(await store.get(newSubmissionId()));
    }));

  test(`${label}: a stored submission is never overwritten`, () =>
    withStore(async ({ store }) => {
      const first = sample();
      await store.put(first);
      let error: unknown;
      try {
        await store.put({ ...first, company: 'Impostor' });
      } catch (e) {
        error = e;
      }
      assert.instanceOf(error, SubmissionExistsError);
      assert.deepEqual(await store.get(first.id), first);
    }));

  test(`${label}: a later change to the object put is not stored`, () =>
    withStore(async ({ store }) => {
      const item = sample();
      await store.put(item);
      item.company = 'Changed';
      assert.equal((await store.get(item.id))?.company, 'Société Mécanique');
    }));
}

/** Registers the durability test for a store on disk: `reopen` opens the same storage again, as after a restart. */
export function durableStoreSuite(label: string, open: () => Promise<StoreUnderTest & { reopen: () => Promise<SubmissionStore> }>): void {
  test(`${label}: submissions survive closing and reopening the store`, async () => {
    const s = await open();
    const items = [sample(), sample({ kind: 'removal' })];
    try {
      for (const item of items) await s.store.put(item);
    } finally {
      await s.store.close();
    }
    const reopened = await s.reopen();
    try {
      for (const item of items) assert.deepEqual(await reopened.get(item.id), item);
    } finally {
      await reopened.close();
      await s.cleanup?.();
    }
  });
}
