/**
 * Signals and the atlas: GET /signals and /atlas, POST /signals/send, and the /signals/stream
 * event stream (node-api.md §4–§6, docs/signals.md).
 */
import type { KeptSignal } from '../../signal/book.ts';
import type { SignalService } from '../../signal/service.ts';
import type { Feature } from '../feature.ts';
import { lastEventIdParam, SIGNAL_FILTER_PARAMS, signalFilterParams, signalRequest } from '../input.ts';

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
