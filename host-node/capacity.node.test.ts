import assert from 'node:assert/strict';
import os from 'node:os';
import { test } from 'node:test';
import { HIGHMEM_MB, MANYCORE_CORES, type MachineFacts, probeCapacity, thisMachine } from './capacity.ts';

const GiB = 1024 ** 3;

function machine(facts: Partial<MachineFacts> = {}): MachineFacts {
  return {
    cores: 4,
    totalMemBytes: 8 * GiB,
    platform: 'linux',
    arch: 'x64',
    ...facts,
  };
}

test('capacity: this machine, as node:os sees it', () => {
  const probed = probeCapacity();
  assert.equal(probed.cpuCores, os.availableParallelism());
  assert.equal(probed.memMb, Math.floor(os.totalmem() / 2 ** 20));
  assert.ok(probed.cpuCores >= 1 && probed.memMb >= 1);
  const platform = { linux: 'linux', darwin: 'macos', win32: 'windows' }[process.platform as string];
  if (platform) assert.ok(probed.tags.includes(platform));
  assert.equal(probed.tags.includes('manycore'), probed.cpuCores >= 16);
  assert.equal(probed.tags.includes('highmem'), probed.memMb >= 32 * 1024);
  assert.ok(!probed.tags.includes('docker') && !probed.tags.includes('gpu'), 'the engine, not the machine, earns docker and gpu');
  assert.equal(new Set(probed.tags).size, probed.tags.length, 'no tag twice');
  assert.deepEqual(probeCapacity(thisMachine()), probed);
});

test('capacity: platform and architecture tags', () => {
  assert.deepEqual(probeCapacity(machine()), { cpuCores: 4, memMb: 8192, tags: ['linux', 'x86_64'] });
  assert.deepEqual(probeCapacity(machine({ platform: 'darwin', arch: 'arm64' })).tags, ['macos', 'aarch64']);
  assert.deepEqual(probeCapacity(machine({ platform: 'win32', arch: 'x64' })).tags, ['windows', 'x86_64']);
  assert.deepEqual(probeCapacity(machine({ platform: 'freebsd', arch: 'riscv64' })).tags, [], 'unknown ones get no tag');
});

test('capacity: manycore from 16 cores, highmem from 32 GiB', () => {
  assert.equal(MANYCORE_CORES, 16);
  assert.equal(HIGHMEM_MB, 32_768);
  assert.deepEqual(probeCapacity(machine({ cores: 15, totalMemBytes: 32 * GiB - 1 })).tags, ['linux', 'x86_64']);
  assert.deepEqual(probeCapacity(machine({ cores: 16, totalMemBytes: 32 * GiB })).tags, ['linux', 'x86_64', 'manycore', 'highmem']);
  assert.equal(probeCapacity(machine({ totalMemBytes: 32 * GiB - 1 })).memMb, 32_767);
});
