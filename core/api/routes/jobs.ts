/**
 * The compute market's routes (node-api.md §4 the /jobs routes, §7; docs/jobs.md):
 * POST /jobs/bid, GET /jobs, GET /jobs/:id, GET /jobs/:id/logs (?follow=1 as SSE),
 * POST /jobs/:id/settle, POST /jobs/:id/expire, DELETE /jobs/:id. The last two and the logs are
 * ours: the spec has the payer's JobExpire but no route for it, and no way to read a job's output.
 */
import { formatAmount } from '../../encoding/amount.ts';
import { toHex } from '../../encoding/hex.ts';
import type { JobsService } from '../../jobs/service.ts';
import type { LogEvent } from '../../jobs/types.ts';
import type { Feature } from '../feature.ts';
import { checkBody, EmptyBody, jobRefParam, jobRequest, logParams, nodeIdParam, settleRequest } from '../input.ts';
import { ApiProblem } from '../problem.ts';

const LOG_PARAMS: readonly string[] = ['after', 'follow'];

function jobIdParam(value: string): Uint8Array {
  return nodeIdParam(value, 'job_id');
}

function unknownJob(ref: string): ApiProblem {
  return new ApiProblem('unknown-job', `this node has no job or container ${JSON.stringify(ref)}`);
}

// `/jobs/bid` comes before `/jobs/:id`, and the routes under a job before the job itself: first match wins.
export const jobRoutes: Feature<JobsService> = (service, { json, query, readJson, reader, stream }) => [
  {
    path: '/jobs/bid',
    post: async ({ request, url }) => {
      query(url);
      const { job_id } = await service.bidJob(jobRequest(await readJson(request)));
      return json({ job_id }, 201);
    },
  },
  reader('/jobs', () => service.listJobs()),
  {
    path: '/jobs/:id/logs',
    get: async (call) => {
      const jobId = jobIdParam(call.params.id!);
      const { after, follow } = logParams(query(call.url, LOG_PARAMS), call.request.headers.get('last-event-id'));
      if (!follow) {
        const logs = await service.jobLogs(jobId, after);
        if (logs === undefined) throw unknownJob(call.params.id!);
        return json(logs);
      }
      if (service.getJob(jobId) === undefined) throw unknownJob(call.params.id!);
      return stream<LogEvent>(
        call,
        (listener, end) => {
          const unsubscribe = service.followJobLogs(jobId, after, listener, end);
          // Gone between the look-up and the subscription: there is nothing more to send.
          if (unsubscribe === undefined) end();
          return unsubscribe ?? (() => {});
        },
        { allowed: LOG_PARAMS, id: (line) => line.seq },
      );
    },
  },
  {
    path: '/jobs/:id/settle',
    post: async ({ request, url, params }) => {
      const jobId = jobIdParam(params.id!);
      query(url);
      const { cost, payerSig } = settleRequest(await readJson(request));
      await service.settleJob(jobId, cost, payerSig);
      return json({ job_id: toHex(jobId), cost: formatAmount(cost) }, 202);
    },
  },
  {
    path: '/jobs/:id/expire',
    post: async ({ request, url, params }) => {
      const jobId = jobIdParam(params.id!);
      query(url);
      const body = await readJson(request, { optional: true });
      if (body !== undefined) checkBody(body, EmptyBody);
      const { tx_id } = await service.expireJob(jobId);
      return json({ tx_id }, 202);
    },
  },
  {
    path: '/jobs/:id',
    get: ({ url, params }) => {
      const jobId = jobIdParam(params.id!);
      query(url);
      const job = service.getJob(jobId);
      if (job === undefined) throw unknownJob(params.id!);
      return json(job);
    },
    delete: async ({ url, params }) => {
      const ref = jobRefParam(params.id!);
      query(url);
      if (!(await service.stopJob(ref))) throw unknownJob(ref);
      return new Response(null, { status: 204 });
    },
  },
];
