/**
 * The API forms of signals and atlas entries (node-api.md §2), as GET /signals, GET /atlas and
 * /signals/stream show them. The core's own forms are in signal.ts (bytes, bigint) and atlas.ts.
 */

/** A signal as the API shows it (node-api.md §2, signal protocol v1). */
export interface SignalObject {
  from: string;
  to: string;
  capabilities: { name: string; version: number }[];
  payload_hex: string;
  burn_proof?: { tx_id: string; amount: string; block_height: number; block_hash: string };
  nonce: number;
  id: string;
}
/** An atlas entry (node-api.md §2). */
export interface AtlasEntry {
  node_id: string;
  cpu_cores: number;
  mem_mb: number;
  running_jobs: number;
  last_seen_secs: number;
  tags: string[];
}
