// Temporary files left by killed writes (Node: files, processes).

import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert } from 'chai';
import { test } from '../test/harness.ts';
import { removeStaleTemporaries, writeAtomically } from './atomic-file.ts';

const dir = await mkdtemp(join(tmpdir(), 'mesh-atomic-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

test("removeStaleTemporaries removes a dead or this process's leftovers of the file, and nothing else", async () => {
  const path = join(dir, 'data.json');
  await writeAtomically(path, (file) => file.writeFile('{}'));
  // A process that has exited: its pid names no one now (reuse within the test is not a concern).
  const dead = spawnSync(process.execPath, ['-e', '']).pid!;
  const names = {
    dead: `.data.json.${dead}.0a1b2c.tmp`,
    own: `.data.json.${process.pid}.0a1b2d.tmp`,
    running: `.data.json.${process.ppid}.0a1b2e.tmp`,
    otherFile: `.other.json.${dead}.0a1b2f.tmp`,
    notOurs: '.data.json.backup.tmp',
  };
  for (const name of Object.values(names)) await writeFile(join(dir, name), 'partial');
  assert.sameMembers(await removeStaleTemporaries(path), [names.dead, names.own]);
  assert.sameMembers(await readdir(dir), ['data.json', names.running, names.otherFile, names.notOurs]);
  assert.deepEqual(await removeStaleTemporaries(join(dir, 'missing', 'x.json')), [], 'a folder that does not exist has none');
});
