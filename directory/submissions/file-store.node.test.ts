import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileSubmissionStore } from './file-store.ts';
import { durableStoreSuite, storeSuite } from './store-suite.ts';
import { newSubmissionId } from './token.ts';

async function tempStore(): Promise<{ dir: string; store: FileSubmissionStore; cleanup: () => Promise<void> }> {
  const parent = await mkdtemp(join(tmpdir(), 'mesh-submissions-'));
  const dir = join(parent, 'submissions');
  return { dir, store: await FileSubmissionStore.open(dir), cleanup: () => rm(parent, { recursive: true, force: true }) };
}

storeSuite('FileSubmissionStore', tempStore);
durableStoreSuite('FileSubmissionStore', async () => {
  const s = await tempStore();
  return { ...s, reopen: () => FileSubmissionStore.open(s.dir) };
});

test('FileSubmissionStore: a private folder (0700) of private files (0600), no temporary file left', async () => {
  const { dir, store, cleanup } = await tempStore();
  try {
    const id = newSubmissionId();
    await store.put({
      id,
      token_sha256: 'cd'.repeat(32),
      kind: 'join',
      record_id: null,
      company: 'Acme',
      email: 'a@acme.example',
      message: '',
      status: 'received',
      received: '2025-06-02T12:00:00.000Z',
    });
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.equal((await stat(join(dir, `${id}.json`))).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(dir), [`${id}.json`]);
    assert.equal(JSON.parse(await readFile(join(dir, `${id}.json`), 'utf8')).company, 'Acme');
  } finally {
    await cleanup();
  }
});

test('FileSubmissionStore: an existing folder is made private; ids never become paths outside it', async () => {
  const { dir, store, cleanup } = await tempStore();
  try {
    const { chmod } = await import('node:fs/promises');
    await chmod(dir, 0o755);
    await FileSubmissionStore.open(dir);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.equal(await store.get('../../etc/passwd'), undefined);
    await assert.rejects(
      store.put({
        id: '../x',
        token_sha256: '',
        kind: 'join',
        record_id: null,
        company: 'x',
        email: 'x@x.example',
        message: '',
        status: 'received',
        received: '',
      }),
      RangeError,
    );
  } finally {
    await cleanup();
  }
});
