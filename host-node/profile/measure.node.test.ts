// What `mesh profile` makes of a measurement's output (the Node probe's line, the shell's facts
// under cgroup v1 and v2), and the storage figures of a real temporary file.

import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { measureStorage, parseCompute } from './measure.ts';

const MEMINFO = ['MESH-FACT MemTotal MemTotal:       16384000 kB', 'MESH-FACT MemAvailable MemAvailable:    8192000 kB'];

test("parseCompute: the Node probe's line is taken as it is", () => {
  const figures = { cpu: { cores: 4, threads: 8, gflops_fp32: 3.5, mem_bw_gbps: 9 }, memory: { total_mb: 100, available_mb: 50 } };
  assert.deepEqual(parseCompute(`noise\nMESH-PROFILE ${JSON.stringify({ probe: 'node', ...figures })}\n`), { ...figures, probe: 'node' });
});

test('parseCompute: shell facts under cgroup v2 and v1 give the limits; no limit gives the machine; no fp32 figure', () => {
  const v2 = parseCompute(
    [
      'MESH-FACT threads 8',
      'MESH-FACT cpu.max 150000 100000',
      'MESH-FACT memory.max 268435456',
      'MESH-FACT memory.current 67108864',
      ...MEMINFO,
      'MESH-FACT copied 1073741824 50',
    ].join('\n'),
  );
  assert.deepEqual(v2, {
    cpu: { cores: 2, threads: 2, gflops_fp32: null, mem_bw_gbps: 1073741824 / 0.5 / 1e9 },
    memory: { total_mb: 256, available_mb: 192 },
    probe: 'shell',
  });
  const v1 = parseCompute(
    [
      'MESH-FACT threads 8',
      'MESH-FACT cpu.max 100000 100000',
      'MESH-FACT memory.max 536870912',
      'MESH-FACT memory.current 0',
      ...MEMINFO,
      'MESH-FACT copied 0 0',
    ].join('\n'),
  );
  assert.deepEqual(v1.cpu, { cores: 1, threads: 1, gflops_fp32: null, mem_bw_gbps: null });
  assert.equal(v1.memory.total_mb, 512);
  const none = parseCompute(
    ['MESH-FACT threads 8', 'MESH-FACT cpu.max -1 100000', 'MESH-FACT memory.max 9223372036854771712', 'MESH-FACT memory.current 0', ...MEMINFO].join('\n'),
  );
  assert.equal(none.cpu.threads, 8);
  assert.deepEqual(none.memory, { total_mb: Math.floor((16384000 * 1024) / 1048576), available_mb: Math.floor((8192000 * 1024) / 1048576) });
  assert.throws(() => parseCompute('sh: cannot run\n'), /printed no figures/);
});

test('measureStorage: sizes of the filesystem, read and write speeds of a file it then removes', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-profile-'));
  try {
    const storage = await measureStorage(dir, 4 * 1024 * 1024);
    assert.ok(storage.total_gb > 0 && storage.free_gb <= storage.total_gb, JSON.stringify(storage));
    assert.ok(storage.read_mbps !== null && storage.read_mbps > 0 && storage.write_mbps !== null && storage.write_mbps > 0);
    assert.deepEqual(await readdir(dir), [], 'the temporary file is gone');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
