/**
 * The node's real HTTP API (createNodeApi on serveFetch) on loopback over a FakeNode that each test
 * may swap for a fresh one, for the tests of the commands that talk to a node (`mesh jobs`,
 * `mesh msg`, `mesh names`): the client options that reach it, and a runner that captures what a
 * command line prints and exits with.
 */

import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FakeNode } from '../../core/api/fake-node.test-util.ts';
import { createNodeApi } from '../../core/api/handler.ts';
import type { ApiServices } from '../../core/api/service.ts';
import { type HttpServer, serveFetch } from '../http-server.ts';
import type { Command } from './command.ts';
import { runCommand } from './run.ts';

const TOKEN = 'fake-api-test-token';

export interface FakeApi {
  /** The fake the API serves now. */
  readonly node: FakeNode;
  /** `--node`, `--token-file` and `--data-dir` for this API. */
  readonly common: readonly string[];
  /** Runs `line` (client options included) against a fresh fake, or `fresh`; its exit code and output. */
  /** Runs `cmd` with `line` against `fresh` (a new fake by default), `input` as its standard input. */
  run(cmd: Command, path: string, line: readonly string[], fresh?: FakeNode, input?: string): Promise<{ code: number; out: string; err: string }>;
  /** Serves `fresh` from now on (for a command run in a process of its own). */
  serve(fresh: FakeNode): void;
  close(): Promise<void>;
}

export async function serveFakeApi(): Promise<FakeApi> {
  let node = new FakeNode();
  // The routes read `node`'s services at each request, so each run may put a fresh fake in its place.
  const live = (key: keyof ApiServices): object =>
    new Proxy(
      {},
      {
        get: (_, name) => {
          const service = node.services[key];
          const value: unknown = Reflect.get(service, name, service);
          return typeof value === 'function' ? (value as () => unknown).bind(service) : value;
        },
      },
    );
  const services = Object.fromEntries(Object.keys(node.services).map((key) => [key, live(key as keyof ApiServices)])) as Required<ApiServices>;
  const server: HttpServer = await serveFetch(createNodeApi({ services, token: TOKEN }), '127.0.0.1', 0);
  const dir = await mkdtemp(join(tmpdir(), 'mesh-fake-api-'));
  await writeFile(join(dir, 'token'), `${TOKEN}\n`);
  return {
    get node() {
      return node;
    },
    common: ['--node', server.url, '--token-file', join(dir, 'token'), '--data-dir', dir],
    async run(cmd, path, line, fresh = new FakeNode(), input = '') {
      node = fresh;
      let out = '';
      let err = '';
      const code = await runCommand(cmd, [...line], path, { out: (t) => void (out += t), err: (t) => void (err += t), input: Readable.from([input]) });
      return { code, out, err };
    },
    serve(fresh) {
      node = fresh;
    },
    close: () => server.close(),
  };
}
