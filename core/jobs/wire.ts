/**
 * The jobs protocol on the mesh RPC protocol 1 (docs/jobs.md "Protocol"): four exchanges, each one
 * request and one answer, the peer authenticated by the connection.
 *
 * - `jobs.offer`, payer → host: the spec, and the signed JobBid (absent: a reservation, asked before a
 *   heartbeat-billed bid names its host). Answer: taken, or refused with every reason.
 * - `jobs.report`, host → payer: the job's state on the host (sent again until answered). Answer:
 *   whether the payer still places the job there, and for an ended job the payer's v2 signature
 *   over the cost when the cost is within the bid.
 * - `jobs.logs`, payer → host: output lines after a position.
 * - `jobs.stop`, payer → host: stop the job's container.
 */
import { array, bool, bytes32, bytes64, type Infer, option, struct, u8, u16, u128, uint53, utf8, varBytes, variant } from '../encoding/codec.ts';
import { MAX_TX_BYTES } from '../ledger/tx.ts';

export const JOB_RPC = {
  offer: 'jobs.offer',
  report: 'jobs.report',
  logs: 'jobs.logs',
  stop: 'jobs.stop',
} as const;

/** A refusal's reasons are joined into one text of at most this many bytes. */
export const MAX_REASON_BYTES = 1024;
/** Container ids and names as engines give them are far shorter. */
export const MAX_CONTAINER_ID_BYTES = 128;
const SPEC_MAX_BYTES = 1_200_000;

export const offerCodec = struct({ spec: varBytes(SPEC_MAX_BYTES), bid_tx: option(varBytes(MAX_TX_BYTES)) }, 'job offer');
export const offerAnswerCodec = variant(
  'answer',
  {
    Taken: [0, struct({}, 'taken')],
    Refused: [1, struct({ reasons: array(utf8(MAX_REASON_BYTES), 16) }, 'refused')],
  },
  'offer answer',
);

/** The job's state on its host. */
export const reportCodec = struct(
  {
    job_id: bytes32,
    state: variant(
      'state',
      {
        /** The container is running. */
        Running: [0, struct({ container_id: utf8(MAX_CONTAINER_ID_BYTES), started_ms: uint53 }, 'running')],
        /** The container has ended; `reason` is set when it ended abnormally; `cost` is what the host asks. */
        Ended: [
          1,
          struct(
            {
              container_id: utf8(MAX_CONTAINER_ID_BYTES),
              started_ms: uint53,
              finished_ms: uint53,
              exit_code: option(uint53),
              reason: option(utf8(MAX_REASON_BYTES)),
              cost: u128,
            },
            'ended',
          ),
        ],
        /** The host could not start it (nothing ran, nothing is owed): the payer may place it elsewhere. */
        NotStarted: [2, struct({ reason: utf8(MAX_REASON_BYTES) }, 'not started')],
      },
      'job state',
    ),
  },
  'job report',
);

export const reportAnswerCodec = struct({ placed_here: bool, payer_sig: option(bytes64) }, 'report answer');

/** `tail` > 0: the last `tail` lines instead of those after `after`. */
export const logsRequestCodec = struct({ job_id: bytes32, after: uint53, tail: u16 }, 'logs request');
export const MAX_LOG_LINES_PER_ANSWER = 500;
export const MAX_LOG_LINE_BYTES = 16 * 1024;
/** A logs answer: at most MAX_LOG_LINES_PER_ANSWER lines of MAX_LOG_LINE_BYTES, with room for framing. */
export const MAX_LOGS_ANSWER_BYTES = 16 * 1024 * 1024;
export const logsAnswerCodec = struct(
  {
    known: bool,
    lines: array(struct({ seq: uint53, stream: u8, text: utf8(MAX_LOG_LINE_BYTES), at: uint53 }, 'log line'), MAX_LOG_LINES_PER_ANSWER),
    ended: bool,
  },
  'logs answer',
);

export const stopRequestCodec = struct({ job_id: bytes32 }, 'stop request');
export const stopAnswerCodec = struct({ stopped: bool }, 'stop answer');

export type Offer = Infer<typeof offerCodec>;
export type OfferAnswer = Infer<typeof offerAnswerCodec>;
export type Report = Infer<typeof reportCodec>;
export type ReportState = Report['state'];
export type ReportAnswer = Infer<typeof reportAnswerCodec>;
export type LogsAnswer = Infer<typeof logsAnswerCodec>;
