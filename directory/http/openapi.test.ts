import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { openApiDocument } from './openapi.ts';

type Node = Record<string, unknown>;

test('every response the OpenAPI document declares, a 503 too, names the RateLimit headers the service sends', () => {
  const document = openApiDocument() as Node;
  const components = (document.components as Node).responses as Record<string, Node>;
  const resolve = (response: Node): Node => (typeof response.$ref === 'string' ? components[response.$ref.replace('#/components/responses/', '')]! : response);
  let checked = 0;
  for (const [path, item] of Object.entries(document.paths as Record<string, Node>)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries((operation as Node).responses as Record<string, Node>)) {
        if (status === '204' || status === '304') continue;
        const headers = (resolve(response).headers ?? {}) as Node;
        assert.includeMembers(Object.keys(headers), ['RateLimit-Policy', 'RateLimit'], `${method} ${path} ${status}`);
        checked++;
      }
    }
  }
  assert.isAbove(checked, 20);
  assert.includeMembers(Object.keys(components.Unavailable!.headers as Node), ['Retry-After', 'RateLimit-Policy', 'RateLimit']);
});
