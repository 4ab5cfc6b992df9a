/**
 * Signals and the atlas: GET /signals and /atlas, POST /signals/send, and the /signals/stream
 * event stream (node-api.md §4–§6, docs/signals.md).
 */
import type { AtlasEntry, SignalObject } from '../../signal/types.ts';
import type { Unsubscribe } from '../../web/sse.ts';
import type { Feature } from '../feature.ts';
import { signalRequest } from '../input.ts';

/** A request to send a signal (POST /signals/send), validated and decoded. */
export interface SignalRequest {
  readonly to: 'broadcast' | Uint8Array;
  readonly payload: Uint8Array;
  readonly capabilities: readonly { readonly name: string; readonly version: number }[];
  /** The on-chain transaction whose burn pays for a non-empty payload. */
  readonly burnTxId: Uint8Array | null;
}

export interface SignalService {
  atlas(): AtlasEntry[];
  /** The last validated signals, newest last. */
  signals(): SignalObject[];
  /** Signs and gossips a signal; throws SignalError (code names the rule) when it cannot be sent. */
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }>;
  onSignal(listener: (signal: SignalObject) => void): Unsubscribe;
}

export const signalRoutes: Feature<SignalService> = (service, { json, query, readJson, reader, stream }) => [
  { path: '/signals/stream', get: (call) => stream(call, (listener) => service.onSignal(listener)) },
  reader('/signals', () => service.signals()),
  reader('/atlas', () => service.atlas()),
  {
    path: '/signals/send',
    post: async ({ request, url }) => {
      query(url);
      const { id, nonce } = await service.sendSignal(signalRequest(await readJson(request)));
      return json({ id, nonce }, 202);
    },
  },
];
