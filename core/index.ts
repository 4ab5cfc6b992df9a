/**
 * The mesh core: the protocol, runtime-agnostic. Hosts (Node, browser) import from here.
 */

export * from './chain/chain.ts';
export * from './chain/mempool.ts';
export * from './chain/miner.ts';
export * from './chain/readmodel.ts';
export * from './crypto/ed25519.ts';
export * from './crypto/random.ts';
export * from './crypto/sha256.ts';
export * from './encoding/amount.ts';
export * from './encoding/bytes.ts';
export * from './encoding/codec.ts';
export * from './encoding/hex.ts';
export * from './errors.ts';
export * from './ledger/apply.ts';
export * from './ledger/block.ts';
export * from './ledger/domain.ts';
export * from './ledger/header.ts';
export * from './ledger/merkle.ts';
export * from './ledger/params.ts';
export * from './ledger/producer.ts';
export * from './ledger/state.ts';
export * from './ledger/status.ts';
export * from './ledger/tx.ts';
export * from './ledger/validate.ts';
export * from './signal/atlas.ts';
export * from './signal/book.ts';
export * from './signal/burn.ts';
export * from './signal/errors.ts';
export * from './signal/signal.ts';
export * from './signal/types.ts';
export * from './store/kv.ts';
export * from './time/clock.ts';
