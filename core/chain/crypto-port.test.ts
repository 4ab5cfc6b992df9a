// The crypto port reaches what hashes and verifies for a chain: a chain given its own SHA-256 and
// Ed25519 backend decodes, checks and applies blocks with them, and its mempool verifies with them.
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import type { CryptoBackends } from '../crypto/backends.ts';
import { defaultEd25519Backend, type Ed25519Backend } from '../crypto/ed25519.ts';
import { countingSha256 } from '../crypto/sha256.test-util.ts';
import { coreSha256 } from '../crypto/sha256.ts';
import { toHex } from '../encoding/hex.ts';
import { decodeBlock } from '../ledger/block.ts';
import { Mempool } from './mempool.ts';
import { key, mine, nextBlock, openChain, params, tx } from './testnet.test-util.ts';

/** The core's own backends behind counters. */
function counted(): { crypto: CryptoBackends; hashed: () => number; verified: () => number } {
  const sha = countingSha256(coreSha256);
  let verified = 0;
  const ed25519: Ed25519Backend = {
    name: 'counted',
    signer: (seed) => defaultEd25519Backend.signer(seed),
    verifyEquation: (publicKey, message, signature) => {
      verified++;
      return defaultEd25519Backend.verifyEquation(publicKey, message, signature);
    },
  };
  return { crypto: { sha256: sha.hasher, ed25519 }, hashed: sha.hashed, verified: () => verified };
}

test('crypto port: a chain decodes, verifies and applies with the backends it is given', async () => {
  const producer = key(1);
  const source = await openChain();
  const [block] = await mine(source, producer, 1);
  const { crypto, hashed, verified } = counted();
  const chain = await openChain({ crypto });
  assert.strictEqual(chain.crypto, crypto);
  const before = hashed();
  const received = decodeBlock(params.network, block!.bytes, chain.crypto.sha256);
  assert.isAbove(hashed(), before, 'the block hash and its tx ids');
  const hashedBefore = hashed();
  assert.equal(await chain.addBlock(received), 'extended');
  assert.isAbove(verified(), 0, "the block's signatures");
  assert.isAbove(hashed(), hashedBefore, 'its tx_root and the state root');
  assert.equal(toHex(chain.tip.hash), toHex(block!.hash));
});

test("crypto port: the mempool verifies with its chain's backend; blocks built on the chain hash with its SHA-256", async () => {
  const producer = key(1);
  const { crypto, hashed, verified } = counted();
  const chain = await openChain({ crypto });
  await mine(chain, producer, 1);
  const pool = new Mempool(chain);
  const checked = verified();
  await pool.add(await tx(producer, { kind: 'Transfer', nonce: 1, to: key(2).publicKey, amount: 1n }));
  assert.isAbove(verified(), checked);
  const built = hashed();
  await nextBlock(chain, producer, pool);
  assert.isAbove(hashed(), built);
});
