/** Whether a process is running, by its id (Node: signal 0 tests for it without sending anything). */

/** True when process `pid` exists; EPERM says it does, under another user. */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}
