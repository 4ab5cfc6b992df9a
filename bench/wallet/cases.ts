/**
 * The wallet benchmark's measurements against a real `mesh node` serving a generated devnet chain:
 *
 * - a cold page (a fresh browser context: no IndexedDB, no cache) opens /wallet, imports a key that
 *   holds credits, and shows its balance once the light node has checked the checkpoint's state and
 *   synced to the tip; next to the same light start on Node (core/node/light-start.ts over TCP, a
 *   memory store) from the same checkpoint;
 * - the page's bundle, gzipped, next to libp2p's own minimal browser node bundled the same way.
 */

import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import type { Browser } from 'playwright-core';
import { SigningKey } from '../../core/crypto/ed25519.ts';
import { identityFileText } from '../../core/crypto/identity-file.ts';
import { formatCredits } from '../../core/encoding/amount.ts';
import { fromHex, toHex } from '../../core/encoding/hex.ts';
import type { ChainParams } from '../../core/ledger/params.ts';
import { openLightChain } from '../../core/node/light-start.ts';
import { MeshNode } from '../../core/node/node.ts';
import { lightNodeServices } from '../../core/node/services.ts';
import { MemoryStore } from '../../core/store/kv.ts';
import { startP2PNetwork } from '../../host-node/p2p.ts';
import { WALLET_BUILD, walletBundle } from '../../host-node/wallet-site.ts';
import { getJson, type MeshProcess, tcpAddress } from '../../test/mesh-process.ts';

const MINIMAL = fileURLToPath(new URL('./libp2p-minimal.ts', import.meta.url));

export interface WalletConfigView {
  readonly checkpoint: { readonly height: number; readonly hash: string };
}

/** One cold start: milliseconds to a verified balance at the tip, and the balance shown. */
export interface StartRun {
  readonly ms: number;
  readonly balance: string;
  readonly checkpointHeight: number;
  readonly tipHeight: number;
}

export interface BundleSizes {
  readonly walletBytes: number;
  readonly walletGzipBytes: number;
  readonly minimalBytes: number;
  readonly minimalGzipBytes: number;
}

/** The wallet's bundle and libp2p's minimal browser node, built with the same esbuild options. */
export async function bundleSizes(): Promise<BundleSizes> {
  const wallet = new TextEncoder().encode(await walletBundle());
  const built = await esbuild.build({ ...WALLET_BUILD, entryPoints: [MINIMAL] });
  const minimal = built.outputFiles[0]!.contents;
  return { walletBytes: wallet.length, walletGzipBytes: gzipSync(wallet).length, minimalBytes: minimal.length, minimalGzipBytes: gzipSync(minimal).length };
}

/** A fresh page imports `key` at the host's /wallet and waits for its balance at `tipHash`'s height. */
export async function coldPage(browser: Browser, host: MeshProcess, key: SigningKey, tipHeight: number): Promise<StartRun> {
  const config = await getJson<WalletConfigView>(host, '/wallet/config.json');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${host.url}/wallet`);
    // The onboarding shows once the page has its config and listens for the file.
    await page.locator('#create').waitFor();
    await page.setInputFiles('#import-file', { name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(identityFileText(key)) });
    await page.waitForFunction(
      (tip) => document.querySelector('#status')?.getAttribute('data-state') === 'synced' && document.querySelector('#height')?.textContent === String(tip),
      tipHeight,
      { timeout: 120_000, polling: 10 },
    );
    const ms = performance.now() - started;
    // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node; the rendered text is the point.
    return { ms, balance: await page.locator('#balance').innerText(), checkpointHeight: config.checkpoint.height, tipHeight };
  } finally {
    await context.close();
  }
}

/** The same light start on Node: connect over TCP, fetch and check the checkpoint's state, sync to the tip. */
export async function nodeLightStart(host: MeshProcess, params: ChainParams, key: SigningKey, tipHash: string): Promise<StartRun> {
  const config = await getJson<WalletConfigView>(host, '/wallet/config.json');
  const started = performance.now();
  const network = await startP2PNetwork({ key: SigningKey.generate(), port: 0, listenHost: '127.0.0.1', bootstrap: [tcpAddress(host)] });
  try {
    const chain = await openLightChain({ network, store: new MemoryStore(), params, checkpoint: fromHex(config.checkpoint.hash, 32) });
    const node = await MeshNode.create({ chain, network, key: SigningKey.generate(), services: lightNodeServices() });
    await node.start();
    try {
      while (toHex(chain.tip.hash) !== tipHash) await new Promise((resolve) => setTimeout(resolve, 2));
      const ms = performance.now() - started;
      return {
        ms,
        balance: formatCredits(chain.state.account(key.publicKey).balance),
        checkpointHeight: config.checkpoint.height,
        tipHeight: chain.tip.height,
      };
    } finally {
      await node.stop();
    }
  } finally {
    await network.stop();
  }
}
