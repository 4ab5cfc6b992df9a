// Deno only: Deno KV (needs --unstable-kv and write access to the temporary folder).
import { KvSubmissionStore } from './kv-store.ts';
import { durableStoreSuite, storeSuite } from './store-suite.ts';

const deno = (
  globalThis as unknown as {
    Deno: { makeTempDir(): Promise<string>; remove(path: string, options: { recursive: boolean }): Promise<void> };
  }
).Deno;

async function tempKv(): Promise<{ path: string; store: KvSubmissionStore; cleanup: () => Promise<void> }> {
  const dir = await deno.makeTempDir();
  const path = `${dir}/submissions.sqlite`;
  return { path, store: await KvSubmissionStore.open(path), cleanup: () => deno.remove(dir, { recursive: true }) };
}

storeSuite('KvSubmissionStore', tempKv);
durableStoreSuite('KvSubmissionStore', async () => {
  const s = await tempKv();
  return { ...s, reopen: () => KvSubmissionStore.open(s.path) };
});
