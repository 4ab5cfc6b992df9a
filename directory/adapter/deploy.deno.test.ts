// Deno only, with only the permissions Deno Deploy grants a deployment that reads no file: the
// network (loopback) and Deno KV, no --allow-read, no --allow-write (package.json runs this file
// apart from the others for that). The whole service suite behind Deno.serve, submissions in Deno KV.
import { KvSubmissionStore } from '../submissions/kv-store.ts';
import { serviceSuite, socketTarget } from '../testing/service-suite.ts';
import { serveDeno } from './deno-serve.ts';

const deno = (globalThis as unknown as { Deno: { permissions: { querySync(p: { name: string }): { state: string } } } }).Deno;
for (const name of ['read', 'write']) {
  if (deno.permissions.querySync({ name }).state === 'granted') throw new Error(`run this file without --allow-${name}: it checks Deploy's permissions`);
}

serviceSuite('Deno.serve, Deploy permissions, Deno KV', socketTarget(serveDeno), () => KvSubmissionStore.open(':memory:'));
