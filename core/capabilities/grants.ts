/**
 * What this node grants and takes back on chain: the revocation of a capability link it issued
 * (RevokeCapability) and its admin trust in another node (TrustGrant). Both go through the node's
 * own transactions; both are checked first against the chain and this node's transactions still
 * in the pool, so a request that would change nothing is refused as a conflict.
 */
import type { Chain } from '../chain/chain.ts';
import type { Mempool } from '../chain/mempool.ts';
import type { OwnTransactions } from '../chain/own-transactions.ts';
import { type SignedMessage, type SigningKey, verifyBatch } from '../crypto/ed25519.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import type { TxBody } from '../ledger/tx.ts';
import { GrantError } from './errors.ts';
import type { CapabilitiesService } from './service.ts';
import { linkIdOf, linkSigningBytes, type Token, unsignedLinkBytes } from './token.ts';

export interface GrantsOptions {
  readonly key: SigningKey;
  readonly chain: Pick<Chain, 'state' | 'params'>;
  readonly own: Pick<OwnTransactions, 'submit'>;
  /** The pool, for this node's transactions that have not reached a block yet. */
  readonly mempool: Pick<Mempool, 'queueOf'>;
}

export class Grants implements CapabilitiesService {
  readonly #options: GrantsOptions;

  constructor(options: GrantsOptions) {
    this.#options = options;
  }

  /**
   * Revokes the link of `token` that this node issued: the one whose issuer is this node's key and
   * whose signature verifies; `link` (an index into the chain) names it when there are several.
   * Resolves to the link's id and the RevokeCapability's id. Throws GrantError 'not-issuer',
   * 'link-required', 'already-revoked'.
   */
  async revokeCapability(token: Token, link: number | undefined): Promise<{ token_id: string; tx_id: string }> {
    const { key, chain, own } = this.#options;
    const network = chain.params.network;
    const mine = token.map((l, index) => ({ index, link: l })).filter(({ link: l }) => bytesEqual(l.issuer, key.publicKey));
    const prepared = mine.map(({ index, link: l }) => ({ index, link: l, bytes: unsignedLinkBytes(l) }));
    const messages: SignedMessage[] = prepared.map((p) => ({ publicKey: key.publicKey, message: linkSigningBytes(network, p.bytes), signature: p.link.sig }));
    const verdicts = await verifyBatch(messages);
    const issued = prepared.filter((_, i) => verdicts[i]);
    let chosen: (typeof issued)[number] | undefined;
    if (link !== undefined) {
      chosen = issued.find((p) => p.index === link);
      if (chosen === undefined) throw new GrantError('not-issuer', `link ${link} of the token was not issued by this node`);
    } else {
      if (issued.length === 0) throw new GrantError('not-issuer', 'no link of the token was issued by this node (with a valid signature)');
      if (issued.length > 1) {
        throw new GrantError('link-required', `this node issued links ${issued.map((p) => p.index).join(', ')} of the token: say which to revoke with link`);
      }
      chosen = issued[0]!;
    }
    const tokenId = linkIdOf(network, chosen.bytes, chosen.link.sig);
    const what = `link ${chosen.index} (id ${toHex(tokenId)})`;
    const at = chain.state.revoked(key.publicKey, tokenId);
    if (at !== undefined) throw new GrantError('already-revoked', `${what} was revoked at height ${at}`);
    if (this.#pooled().some((b) => b.kind === 'RevokeCapability' && bytesEqual(b.token_id, tokenId))) {
      throw new GrantError('already-revoked', `${what} is being revoked: the revocation waits in the pool for a block`);
    }
    const tx = await own.submit({ kind: 'RevokeCapability', token_id: tokenId });
    return { token_id: toHex(tokenId), tx_id: toHex(tx.id) };
  }

  /**
   * Grants (`trusted`) or withdraws this node's admin trust in `subject`: a TrustGrant from this
   * node. Throws GrantError 'trust-self', 'trust-unchanged'.
   */
  async setTrust(subject: Uint8Array, trusted: boolean): Promise<{ tx_id: string }> {
    const { key, chain, own } = this.#options;
    if (bytesEqual(subject, key.publicKey)) throw new GrantError('trust-self', 'a node cannot grant admin trust to itself');
    const since = chain.state.trust(key.publicKey, subject);
    // The latest change still in the pool is what the chain will say once it is in a block.
    const pending = this.#pooled().findLast((b) => b.kind === 'TrustGrant' && bytesEqual(b.subject, subject));
    const now = pending?.kind === 'TrustGrant' ? pending.trusted : since !== undefined;
    if (now === trusted) {
      const state = trusted ? `trusts ${toHex(subject)}` : `does not trust ${toHex(subject)}`;
      const where = pending !== undefined ? 'once its pooled TrustGrant is in a block' : trusted ? `since height ${since}` : 'on chain';
      throw new GrantError('trust-unchanged', `this node ${state} ${where}`);
    }
    const tx = await own.submit({ kind: 'TrustGrant', subject, trusted });
    return { tx_id: toHex(tx.id) };
  }

  /** The bodies of this node's transactions waiting in the pool, in nonce order. */
  #pooled(): TxBody[] {
    return this.#options.mempool.queueOf(this.#options.key.publicKey).map((tx) => tx.body);
  }
}

/** Revocations and admin trust, on chain. */
export function capabilitiesService(): (components: GrantsOptions) => Grants {
  return (components) => new Grants(components);
}
