/**
 * What the /capabilities/revoke and /trust routes ask of the node (docs/capabilities.md); Grants implements it.
 */
import type { Token } from './token.ts';

export interface CapabilitiesService {
  /**
   * Revokes the link of `token` this node issued (`link`, its index, when it issued several):
   * signs and pools RevokeCapability. Throws GrantError 'not-issuer' (400), 'link-required' (400),
   * 'already-revoked' (409).
   */
  revokeCapability(token: Token, link: number | undefined): Promise<{ token_id: string; tx_id: string }>;
  /**
   * Grants (`trusted`) or withdraws this node's admin trust in `subject`: signs and pools TrustGrant.
   * Throws GrantError 'trust-self' (400), 'trust-unchanged' (409).
   */
  setTrust(subject: Uint8Array, trusted: boolean): Promise<{ tx_id: string }>;
}
