/**
 * Why app messaging refused a request, each code with the HTTP status and problem the API answers
 * it with (docs/messaging.md "Limits and errors"; the problem codes are in core/api/problem.ts).
 * Failures to reach a peer are the network's own (NETWORK_ERRORS: 502, 503, 504).
 */
import { type ErrorTable, RuledError } from '../errors.ts';

export const MESSAGING_ERRORS = {
  /** `to` is this node: messages and requests go to another node. */
  self: { status: 400, problem: 'invalid-body' },
  /** A payload over MAX_PAYLOAD_BYTES (64 KiB). */
  'payload-too-large': { status: 413, problem: 'too-large' },
  /** A batch with no message or more than MAX_BATCH_MESSAGES. */
  'too-many-messages': { status: 400, problem: 'invalid-body' },
  /** As many of this node's requests wait for their replies as it allows (MAX_OPEN_REQUESTS). */
  'too-many-requests': { status: 429, problem: 'too-many-requests' },
  /** As many topics are subscribed as the node allows (MAX_SUBSCRIPTIONS). */
  'too-many-subscriptions': { status: 507, problem: 'too-many-subscriptions' },
  /** No connected peer is subscribed to the topic: a publish would reach nobody, so none was sent. */
  'no-peers': { status: 503, problem: 'no-peers' },
  /** No request of that reply token reached this node (or it was forgotten long ago). */
  'unknown-reply-token': { status: 404, problem: 'unknown-reply-token' },
  /** The request's time ran out, or its requester went away, before the reply: nothing was sent. */
  'reply-too-late': { status: 410, problem: 'reply-too-late' },
  /** The request was answered already: the second reply was not sent. */
  'already-replied': { status: 409, problem: 'already-replied' },
  /** The peer holds as many requests waiting for their replies as it takes. */
  'peer-busy': { status: 503, problem: 'peer-busy' },
  /** The peer refused the message or request; the detail says why. */
  refused: { status: 502, problem: 'peer-refused' },
} as const satisfies ErrorTable;

export type MessagingErrorCode = keyof typeof MESSAGING_ERRORS;

export class MessagingError extends RuledError<typeof MESSAGING_ERRORS> {
  constructor(code: MessagingErrorCode, message: string) {
    super(MESSAGING_ERRORS, code, message);
  }
}
