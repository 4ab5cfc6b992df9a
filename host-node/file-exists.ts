/** Whether a path exists, asked without racing a read against it. */
import { stat } from 'node:fs/promises';

/** True when `path` exists; false when it does not (ENOENT); any other failure rejects. */
export async function fileExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return false;
    throw error;
  }
}
