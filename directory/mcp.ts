/**
 * The MCP endpoint (/mcp): stateless Streamable HTTP with JSON responses, three read-only tools.
 *
 * Since SDK 1.26 a stateless transport serves one request only, so every request gets a new
 * server and transport. The tools are registered on the SDK's low-level `Server` rather than
 * `McpServer`, because `McpServer` derives input schemas from zod: here the input schema of
 * search_factories is generated from the same parameter definitions as the HTTP search, and the
 * arguments are checked by the same validator, so the tool and the endpoint refuse the same values.
 *
 * A body naming a member twice is refused (400, -32700) before the SDK sees it, as every JSON body
 * of the directory is: JSON.parse would keep the last. JSON-RPC batches are refused (400, -32600) before the SDK sees them: protocol 2025-06-18 dropped
 * batching, and one POST carrying up to the SDK's 100 tool calls would let a client within its rate
 * limit make a hundred searches per request.
 *
 * Results: `structuredContent` (checked by the client against the tool's `outputSchema`) and the
 * same object as JSON text. Bad arguments, an unknown record and an unavailable registry are tool
 * errors (`isError`) whose text is the problem details body the HTTP API would answer.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { HttpProblem, problemBody } from '../core/web/problem.ts';
import { DuplicateMemberError, parseStrictJson } from '../core/web/strict-json.ts';
import { NOTICE } from './http/attribution.ts';
import type { LoadedData } from './http/data-source.ts';
import { structSchema } from './http/json-schema.ts';
import { paramsSchema, validateParams } from './http/params.ts';
import { factoryById, registryStats, searchFactories } from './http/reads.ts';
import { FACTORY_ID_PARAM, FactoryResultStruct, SEARCH_PARAMS, SearchResultStruct, StatsStruct } from './http/schemas.ts';
import type { SearchQuery } from './search.ts';

export interface McpContext {
  /** The loaded dataset; throws the 503 problem when unavailable. */
  readonly requireData: () => Promise<LoadedData>;
  /** The service version reported to clients. */
  readonly version: string;
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** The tools, with schemas generated from the HTTP API's definitions. */
export const TOOLS: readonly Tool[] = [
  {
    name: 'search_factories',
    title: 'Search manufacturers',
    description:
      'Search the manufacturer directory with the filters of GET /api/v1/factories (q, country, city, category, contact, limit, offset). ' +
      'Returns total, next_offset (null on the last page) and factories, with attribution. Check category_evidence before relying on a category.',
    inputSchema: paramsSchema(SEARCH_PARAMS) as Tool['inputSchema'],
    outputSchema: structSchema(SearchResultStruct) as Tool['outputSchema'],
    annotations: READ_ONLY,
  },
  {
    name: 'get_factory',
    title: 'Get one manufacturer record',
    description: 'One record by id (cn-…, wd-Q…, epa-…), with its sources, dates, verification status and attribution.',
    inputSchema: paramsSchema([FACTORY_ID_PARAM]) as Tool['inputSchema'],
    outputSchema: structSchema(FactoryResultStruct) as Tool['outputSchema'],
    annotations: READ_ONLY,
  },
  {
    name: 'registry_stats',
    title: 'Directory statistics',
    description: 'Counts by country, category, contact kind and source, and the dataset date.',
    inputSchema: paramsSchema([]) as Tool['inputSchema'],
    outputSchema: structSchema(StatsStruct) as Tool['outputSchema'],
    annotations: READ_ONLY,
  },
];

const INSTRUCTIONS = `${NOTICE} The tools only read the directory: none sends messages, verifies companies, quotes prices or places orders.`;

function result(body: object): CallToolResult {
  return { structuredContent: body as Record<string, unknown>, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

function toolError(error: HttpProblem): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(problemBody(error)) }] };
}

async function callTool(name: string, args: Record<string, unknown>, ctx: McpContext): Promise<CallToolResult> {
  try {
    switch (name) {
      case 'search_factories': {
        const query = validateParams<SearchQuery>(SEARCH_PARAMS, args, 'json');
        return result(searchFactories(await ctx.requireData(), query));
      }
      case 'get_factory': {
        const { id } = validateParams<{ id: string }>([FACTORY_ID_PARAM], args, 'json');
        const data = await ctx.requireData();
        return result({ factory: factoryById(data, id), attribution: data.attribution });
      }
      case 'registry_stats': {
        validateParams([], args, 'json');
        return result(registryStats(await ctx.requireData()));
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}; tools: ${TOOLS.map((t) => t.name).join(', ')}`);
    }
  } catch (error) {
    if (error instanceof HttpProblem) return toolError(error);
    throw error;
  }
}

/** A JSON-RPC error answer (400), shaped as the SDK's own transport errors are. */
function refused(code: ErrorCode, message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status: 400 });
}

// The body as JSON, or undefined when it is not JSON (the transport then answers its parse error).
// A member given twice is a DuplicateMemberError: JSON.parse would keep the last.
function parseJson(body: Uint8Array): unknown {
  try {
    return parseStrictJson(new TextDecoder().decode(body));
  } catch (error) {
    if (error instanceof DuplicateMemberError) throw error;
    return undefined;
  }
}

/**
 * Answers one POST to /mcp. The caller has already bounded the body (`body` holds the read bytes)
 * and checked the method.
 */
export async function handleMcp(request: Request, body: Uint8Array, ctx: McpContext): Promise<Response> {
  let message: unknown;
  try {
    message = parseJson(body);
  } catch (error) {
    return refused(ErrorCode.ParseError, `Parse error: ${(error as DuplicateMemberError).message}`);
  }
  if (Array.isArray(message)) return refused(ErrorCode.InvalidRequest, 'Invalid Request: batching is not supported');
  const server = new Server(
    { name: 'mesh-directory', title: 'mesh manufacturer directory', version: ctx.version },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...TOOLS] }));
  server.setRequestHandler(CallToolRequestSchema, (call) => callTool(call.params.name, call.params.arguments ?? {}, ctx));
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    // The body was read once, here; the transport takes it parsed rather than reading it again.
    return await transport.handleRequest(request, message === undefined ? {} : { parsedBody: message });
  } finally {
    await server.close();
  }
}
