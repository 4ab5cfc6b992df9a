// /openapi.json as served passes Redocly's recommended rules with no error and no warning (Node: a
// child process, the Redocly CLI).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createDirectory } from '../router.ts';
import { MemorySubmissionStore } from '../submissions/store.ts';
import { fixtureText, textSource } from '../testing/fixtures.ts';

const redocly = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));

test('/openapi.json passes redocly lint (recommended rules) with no errors and no warnings', async () => {
  const directory = createDirectory({ data: textSource(fixtureText()), submissions: new MemorySubmissionStore() });
  const document = await (await directory.fetch(new Request('http://x/openapi.json'))).text();
  const dir = await mkdtemp(join(tmpdir(), 'mesh-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, document);
    // No telemetry and no update check: the run needs no network.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const run = promisify(execFile)(process.execPath, [redocly, 'lint', file, '--extends', 'recommended', '--format', 'json'], { env });
    const { stdout } = await run.catch((error: { stdout: string; stderr: string }) => {
      assert.fail(`redocly lint failed:\n${error.stdout}\n${error.stderr}`);
    });
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(
      report.problems.map((p) => `${p.ruleId}: ${p.message}`),
      [],
    );
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
