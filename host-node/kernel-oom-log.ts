/**
 * The kernel's record of memory-cgroup OOM kills, read from /dev/kmsg. When a container exceeds its
 * memory limit, the kernel logs `oom-kill:constraint=CONSTRAINT_MEMCG,…,oom_memcg=<cgroup>,…`, and
 * every engine names a container's cgroup after its id (`/libpod_parent/libpod-<id>`,
 * `/system.slice/docker-<id>.scope`, …). The executor reads it where the engine does not report the
 * kill itself (Podman 4.3 on cgroup v1): it is the one witness that names the container, outlives
 * the container's cgroup and the executor, and is there until the machine reboots or the ring
 * buffer wraps. Reading it needs root or CAP_SYSLOG (kernel.dmesg_restrict).
 */
import { constants, open } from 'node:fs/promises';

/** Where the kernel's log is read. */
export const KERNEL_LOG = '/dev/kmsg';

const RECORD_BYTES = 16 * 1024;

/**
 * The memory cgroups (the `oom_memcg` paths) whose limit made the kernel kill a process, oldest
 * first, or null when the log cannot be read here (not Linux, not permitted).
 *
 * /dev/kmsg gives one record per read and EAGAIN at the end when opened non-blocking, and EPIPE
 * when the ring overwrote the record it was about to give (the read goes on with the next one);
 * a regular file (tests) is read in chunks, so records are split on newlines either way.
 */
export async function readMemcgOomKills(path: string = KERNEL_LOG): Promise<string[] | null> {
  let file;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  const kills: string[] = [];
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(RECORD_BYTES);
  let carry = '';
  const take = (text: string): void => {
    const lines = (carry + text).split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      const memcg = memcgOfOomKill(line);
      if (memcg !== null) kills.push(memcg);
    }
  };
  try {
    for (;;) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await file.read(buffer, 0, buffer.length, null));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') continue;
        if (code === 'EAGAIN') break;
        // Opened but not readable (EPERM under dmesg_restrict on some kernels): no log.
        if (kills.length === 0) return null;
        break;
      }
      if (bytesRead === 0) break;
      take(decoder.decode(buffer.subarray(0, bytesRead), { stream: true }));
    }
    take('\n');
  } finally {
    await file.close();
  }
  return kills;
}

/** The `oom_memcg` of one log record if it is a memory-cgroup OOM kill, else null. */
export function memcgOfOomKill(record: string): string | null {
  // A kmsg record is "<prio>,<seq>,<usec>,<flags>;<text>".
  const text = record.slice(record.indexOf(';') + 1);
  if (!text.startsWith('oom-kill:') || !text.includes('constraint=CONSTRAINT_MEMCG')) return null;
  const match = /(?:^|,)oom_memcg=([^,\s]+)/.exec(text.slice('oom-kill:'.length));
  return match?.[1] ?? null;
}
