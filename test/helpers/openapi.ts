// Checks a real reply against the OpenAPI document the service serves: the
// status is documented for the operation, the content type is, the body
// matches the schema (JSON Schema 2020-12, ajv), and the required headers are
// there. The test helpers run it on every reply of the end-to-end tests.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadConfig } from '../../src/common/config.js';
import { openApiDocument } from '../../src/front/info/openapi.js';

type Json = Record<string, unknown>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
let cache: { doc: Json; ajv: Ajv2020; validators: Map<string, ValidateFunction> } | undefined;

function state(): NonNullable<typeof cache> {
  if (cache) return cache;
  const doc = openApiDocument(loadConfig({ API_KEYS: 'openapi-check-0123456789' }));
  // strict: false, as OpenAPI adds keywords of its own (x-…, example) to JSON Schema.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  cache = { doc, ajv, validators: new Map() };
  return cache;
}

const pointer = (parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export interface CheckedReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Throws an AssertionError naming what of the reply the document does not describe. */
export function assertMatchesOpenApi(method: string, path: string, reply: CheckedReply): void {
  const { doc, ajv, validators } = state();
  const route = path.split('?')[0] ?? '/';
  const paths = doc.paths as Record<string, Record<string, Json>>;
  let where: string[];
  let response: Json | undefined;
  const op = paths[route]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()];
  if (paths[route] === undefined) {
    where = ['components', 'responses', 'NotFound'];
    response = ((doc.components as Json).responses as Json).NotFound as Json;
    assert.equal(reply.status, 404, `${method} ${route}: an undocumented path answered ${reply.status}`);
  } else {
    // A method the path does not have: its 405 is documented on the path's operations.
    const [opName, found] = op
      ? [method.toLowerCase(), op]
      : (Object.entries(paths[route] ?? {}).find(
          ([, o]) => ((o.responses ?? {}) as Json)[String(reply.status)] !== undefined,
        ) ?? ['', undefined]);
    response = ((found?.responses ?? {}) as Record<string, Json>)[String(reply.status)];
    where = ['paths', route, opName, 'responses', String(reply.status)];
    assert.ok(response, `${method} ${route}: status ${reply.status} is not documented`);
  }
  for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
    if (h.required === true)
      assert.ok(
        reply.headers[name.toLowerCase()] !== undefined,
        `${method} ${route} ${reply.status}: header ${name} is missing`,
      );
  }
  if (method.toUpperCase() === 'HEAD') return;
  const type =
    String(reply.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim() ?? '';
  const content = (response.content ?? {}) as Record<string, Json>;
  assert.ok(content[type], `${method} ${route} ${reply.status}: content type "${type}" is not documented`);
  const ref = `openapi.json#/${pointer([...where, 'content', type, 'schema'])}`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  const body: unknown = type === 'application/json' ? JSON.parse(reply.text) : reply.text;
  assert.ok(
    validate(body),
    `${method} ${route} ${reply.status}: the body does not match the document: ${ajv.errorsText(validate.errors)}\n${reply.text.slice(0, 500)}`,
  );
}
