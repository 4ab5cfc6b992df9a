/**
 * The mesh core: the protocol, runtime-agnostic. Hosts (Node, browser) import from here.
 */
export * from './errors.ts';
export * from './encoding/bytes.ts';
export * from './encoding/hex.ts';
export * from './encoding/amount.ts';
export * from './encoding/codec.ts';
export * from './crypto/sha256.ts';
export * from './crypto/ed25519.ts';
