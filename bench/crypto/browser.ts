/**
 * Browser entry of the crypto benchmark, bundled by esbuild and loaded by bench/crypto/chromium.ts:
 * runs the shared cases with WebCrypto as the baseline. Progress goes to the console; the result
 * is the promise `globalThis.meshBench`.
 */
import { type RuntimeResult, runCryptoSuite } from './cases.ts';

declare global {
  var meshBench: Promise<RuntimeResult> | undefined;
}

const chrome = /Chrom(?:e|ium)\/([\d.]+)/.exec(navigator.userAgent);
globalThis.meshBench = runCryptoSuite(
  {
    runtime: 'chromium',
    version: chrome?.[1] ?? 'unknown',
    details: { userAgent: navigator.userAgent, crossOriginIsolated: String(globalThis.crossOriginIsolated) },
    log: (text) => console.log(text),
  },
  { quick: new URLSearchParams(location.search).has('quick') },
);
