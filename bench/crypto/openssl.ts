/**
 * `openssl speed` as the native limit of one core (and, for Ed25519 verify, of all cores):
 * what a perfect binding to OpenSSL could reach on this machine.
 */
import type { RunFile } from '../lib/environment.ts';

export interface OpensslOk {
  readonly ok: true;
  readonly version: string;
  readonly sha256: { readonly bytes: number; readonly bytesPerSec: number; readonly nsPerOp: number }[];
  readonly ed25519: { readonly signPerSec: number; readonly verifyPerSec: number } | null;
  /** `-multi <cores>`: every core at once. */
  readonly ed25519AllCores: { readonly cores: number; readonly signPerSec: number; readonly verifyPerSec: number } | null;
  readonly notes: string[];
  /** A plain-text table for the terminal. */
  readonly table: string;
}

export type OpensslResult = OpensslOk | { readonly ok: false; readonly reason: string };

/**
 * Reads the processed-bytes figure of `openssl speed … sha256` (in 1000s of bytes per second,
 * "k" suffix) from the row naming the algorithm; the last figure on the row is the largest size.
 */
export function parseHashSpeed(output: string, algorithm = 'sha256'): number | null {
  for (const line of output.split('\n').reverse()) {
    const trimmed = line.trim();
    if (!trimmed.toLowerCase().startsWith(algorithm)) continue;
    const figures = [...trimmed.matchAll(/(\d+(?:\.\d+)?)k\b/g)];
    const last = figures.at(-1);
    if (last) return Number(last[1]) * 1000;
  }
  return null;
}

/** Reads sign/s and verify/s from the Ed25519 row of `openssl speed ed25519` (the summary row with -multi). */
export function parseEd25519Speed(output: string): { signPerSec: number; verifyPerSec: number } | null {
  for (const line of output.split('\n').reverse()) {
    if (!/Ed25519\)/.test(line)) continue;
    const match = /(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s*$/.exec(line.trim());
    if (match) return { signPerSec: Number(match[1]), verifyPerSec: Number(match[2]) };
  }
  return null;
}

const SIZES = [32, 1024, 1048576];

/** Runs the openssl measurements; a missing or failing openssl gives `ok: false` and the reason. */
export async function runOpensslSpeed(options: { quick: boolean; run: RunFile; cores?: number }): Promise<OpensslResult> {
  const run = options.run;
  let version: string;
  try {
    version = (await run('openssl', ['version'], { timeout: 10_000 })).stdout.trim();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return { ok: false, reason: code === 'ENOENT' ? 'openssl is not on PATH' : `openssl version failed: ${String(error)}` };
  }
  const notes: string[] = [];
  const seconds = '1';
  const sha256: OpensslOk['sha256'][number][] = [];
  for (const bytes of SIZES) {
    try {
      const { stdout } = await run('openssl', ['speed', '-seconds', seconds, '-bytes', String(bytes), '-evp', 'sha256'], {
        timeout: 30_000,
      });
      const bytesPerSec = parseHashSpeed(stdout);
      if (bytesPerSec === null) notes.push(`could not read sha256 at ${bytes} B from openssl's output`);
      else sha256.push({ bytes, bytesPerSec, nsPerOp: (bytes / bytesPerSec) * 1e9 });
    } catch (error) {
      notes.push(`openssl speed sha256 -bytes ${bytes} failed: ${String(error)}`);
    }
  }
  let ed25519: OpensslOk['ed25519'] = null;
  try {
    const { stdout } = await run('openssl', ['speed', '-seconds', seconds, 'ed25519'], { timeout: 30_000 });
    ed25519 = parseEd25519Speed(stdout);
    if (!ed25519) notes.push("could not read ed25519 from openssl's output");
  } catch (error) {
    notes.push(`openssl speed ed25519 failed: ${String(error)}`);
  }
  let ed25519AllCores: OpensslOk['ed25519AllCores'] = null;
  const cores = options.cores ?? 1;
  if (!options.quick && cores > 1) {
    // One second is too short for -multi: the forked processes' start-up eats into it.
    try {
      const { stdout } = await run('openssl', ['speed', '-seconds', '2', '-multi', String(cores), 'ed25519'], {
        timeout: 60_000,
      });
      const parsed = parseEd25519Speed(stdout);
      if (parsed) ed25519AllCores = { cores, ...parsed };
      else notes.push("could not read ed25519 -multi from openssl's output");
    } catch (error) {
      notes.push(`openssl speed -multi ed25519 failed: ${String(error)}`);
    }
  }
  const lines = [
    `  ${version}`,
    ...sha256.map((s) => `  sha256 ${String(s.bytes).padStart(8)} B: ${(s.bytesPerSec / 1e6).toFixed(0).padStart(5)} MB/s, ${formatNs(s.nsPerOp)} per hash`),
  ];
  if (ed25519) {
    lines.push(
      `  ed25519, 1 core: ${ed25519.signPerSec.toFixed(0)} sign/s, ${ed25519.verifyPerSec.toFixed(0)} verify/s` +
        ` → 1,024 verifies in ${((1024 / ed25519.verifyPerSec) * 1e3).toFixed(1)} ms`,
    );
  }
  if (ed25519AllCores) {
    lines.push(
      `  ed25519, ${ed25519AllCores.cores} cores: ${ed25519AllCores.signPerSec.toFixed(0)} sign/s, ` +
        `${ed25519AllCores.verifyPerSec.toFixed(0)} verify/s → 1,024 verifies in ` +
        `${((1024 / ed25519AllCores.verifyPerSec) * 1e3).toFixed(1)} ms`,
    );
  }
  lines.push(...notes.map((n) => `  note: ${n}`));
  return { ok: true, version, sha256, ed25519, ed25519AllCores, notes, table: lines.join('\n') };
}

function formatNs(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(0)} ns`;
}
