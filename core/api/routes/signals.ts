/**
 * Signals and the atlas: GET /signals and /atlas, POST /signals/send, and the /signals/stream
 * event stream (node-api.md §4–§6, docs/signals.md).
 */
import type { AtlasEntry, SignalObject } from '../../signal/types.ts';
import type { Unsubscribe } from '../../web/sse.ts';
import type { KeptSignal, SignalFilter } from '../../signal/book.ts';
import type { Feature } from '../feature.ts';
import { lastEventIdParam, SIGNAL_FILTER_PARAMS, signalFilterParams, signalRequest } from '../input.ts';

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
  /** The last validated signals that pass `filter` (default: all), newest last. */
  signals(filter?: SignalFilter): SignalObject[];
  /** Signs and gossips a signal; throws SignalError (code names the rule) when it cannot be sent. */
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }>;
  /** The signals kept from now on that pass `filter`; with `after`, first those still kept above that position. */
  followSignals(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): Unsubscribe;
}

export const signalRoutes: Feature<SignalService> = (service, { json, query, readJson, reader, stream }) => [
  {
    path: '/signals/stream',
    get: (call) => {
      const filter = signalFilterParams(query(call.url, SIGNAL_FILTER_PARAMS));
      const after = lastEventIdParam(call.request.headers.get('last-event-id'));
      // The event is the signal object; its position in the node's book is the frame's id.
      return stream<KeptSignal>(call, (listener) => service.followSignals(after, filter, listener), {
        allowed: SIGNAL_FILTER_PARAMS,
        id: (kept) => kept.seq,
        data: (kept) => kept.signal,
      });
    },
  },
  { path: '/signals', get: ({ url }) => json(service.signals(signalFilterParams(query(url, SIGNAL_FILTER_PARAMS)))) },
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
