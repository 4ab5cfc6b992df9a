/**
 * Why the jobs feature refused a request, each code with the HTTP status and problem the API
 * answers it with (core/api/problem.ts holds the problem codes; docs/node-api.md lists them).
 */
import { type ErrorTable, RuledError } from '../errors.ts';

export const JOB_ERRORS = {
  /** No job (or container) of that id on this node. */
  'unknown-job': { status: 404, problem: 'unknown-job' },
  /** payer_sig does not verify over the v2 settlement bytes of this job, host and cost. */
  'bad-signature': { status: 400, problem: 'invalid-signature' },
  /** Terms no host takes (a heartbeat worth 0, a run longer than the bid stays locked): the detail says which. */
  'bad-terms': { status: 400, problem: 'invalid-body' },
  /** The cost is above the job's bid. */
  'cost-exceeds-bid': { status: 400, problem: 'invalid-body' },
  /** The job is not in a state that takes the request (settling a running job, expiring a settled one). */
  'wrong-state': { status: 409, problem: 'job-conflict' },
  /** Only the job's payer (or host) may do that. */
  'wrong-role': { status: 409, problem: 'job-conflict' },
  /** The bid may not be expired yet (10 blocks after it unaccepted, 1,440 after its acceptance; the detail says how many remain). */
  'not-expired': { status: 409, problem: 'job-conflict' },
  /** No host took a job that needs its host before it is bid (heartbeat billing); the detail lists every reason. */
  'no-host': { status: 503, problem: 'no-host' },
} as const satisfies ErrorTable;

export type JobErrorCode = keyof typeof JOB_ERRORS;

export class JobError extends RuledError<typeof JOB_ERRORS> {
  constructor(code: JobErrorCode, message: string) {
    super(JOB_ERRORS, code, message);
  }
}
