/**
 * The crypto port: the SHA-256 and the Ed25519 backend a component hashes and verifies with,
 * handed to it at construction like its store and clock. A host with faster native ones passes
 * them (host-node/native-crypto.ts); code given none uses the core's own: WebAssembly SHA-256, and
 * WebCrypto Ed25519 where the runtime has it, else noble.
 */
import { defaultEd25519Backend, type Ed25519Backend } from './ed25519.ts';
import { coreSha256, type Sha256Hasher } from './sha256.ts';

export interface CryptoBackends {
  readonly sha256: Sha256Hasher;
  readonly ed25519: Ed25519Backend;
}

/** The core's own backends: what a component given none uses. */
export const coreCrypto: CryptoBackends = Object.freeze({ sha256: coreSha256, ed25519: defaultEd25519Backend });
