// The Deno Deploy entry under `deno serve` in a real process, with only what Deploy grants: the
// network (loopback here), the one environment variable it reads, Deno KV; no file read or write.
// The dataset comes over HTTP from a server on 127.0.0.1 serving the dataset built from the
// shared data. (Node drives the test: it starts both processes.)

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildSharedDataset } from '../testing/shared-dataset.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-deploy-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const datasetPath = join(dir, 'directory.json');
const records = await buildSharedDataset(datasetPath);
const dataset = await readFile(datasetPath);

// deploy.ts serves when imported, so its variable's name is spelt here.
const DATA_URL_VARIABLE = 'DIRECTORY_DATA_URL';
const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
const entry = fileURLToPath(new URL('./deploy.ts', import.meta.url));
// Deno's own folder (its caches and the local Deno KV): where Deploy keeps the project's KV.
const denoDir = join(dir, 'deno');

interface Served {
  readonly url: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

async function denoServe(dataUrl: string | undefined): Promise<Served> {
  const child = spawn(
    deno,
    ['serve', '--host', '127.0.0.1', '--port', '0', '--allow-net=127.0.0.1', `--allow-env=${DATA_URL_VARIABLE}`, '--unstable-kv', '--no-prompt', entry],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: dir, DENO_DIR: denoDir, NO_COLOR: '1', ...(dataUrl ? { [DATA_URL_VARIABLE]: dataUrl } : {}) },
    },
  );
  const output: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        const match = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (match) resolve(match[1]!);
      });
    }
    child.once('exit', (code) => reject(new Error(`deno serve exited with ${code}:\n${output.join('\n')}`)));
  });
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

test('the Deploy entry under deno serve, network and KV only: serves a dataset fetched over HTTP, keeps submissions in KV', async () => {
  const origin = createServer((_request, response) => response.end(dataset));
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const dataUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/directory.json`;
  try {
    const first = await denoServe(dataUrl);
    let receipt: { id: string; token: string };
    try {
      const stats = (await (await fetch(`${first.url}/api/v1/stats`)).json()) as { total: number };
      assert.equal(stats.total, records);
      const ndjson = await fetch(`${first.url}/directory.ndjson`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(ndjson.headers.get('content-encoding'), 'gzip');
      assert.equal((await ndjson.text()).trim().split('\n').length, records);
      const posted = await fetch(`${first.url}/api/v1/submissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'join', company: 'Deploy Test Works', email: 'deploy@test.example' }),
      });
      assert.equal(posted.status, 201);
      receipt = (await posted.json()) as { id: string; token: string };
    } finally {
      await first.stop();
    }
    // A new process, the same KV: the submission is still there.
    const second = await denoServe(dataUrl);
    try {
      const status = await fetch(`${second.url}/api/v1/submissions/${receipt.id}`, { headers: { authorization: `Bearer ${receipt.token}` } });
      assert.equal(status.status, 200);
      assert.equal(((await status.json()) as { company: string }).company, 'Deploy Test Works');
    } finally {
      await second.stop();
    }
    assert.ok((await stat(denoDir)).isDirectory());
  } finally {
    origin.close();
  }
});

test('the Deploy entry without a dataset URL answers every read 503 with factories null and how to get one', async () => {
  const served = await denoServe(undefined);
  try {
    const response = await fetch(`${served.url}/api/v1/factories?q=steel`);
    assert.equal(response.status, 503);
    const problem = (await response.json()) as { factories: unknown; detail: string };
    assert.equal(problem.factories, null);
    assert.match(problem.detail, /mesh directory import/);
  } finally {
    await served.stop();
  }
});
