'use strict';
// Usage: node checks/break.js CASE SRC DST
// Copies a platform folder SRC to DST and breaks it in one known way, so
// check.sh can assert that the platform's validator rejects it. Prints the
// text the validator's complaint must contain.
const fs = require('fs');
const path = require('path');

const edit = (dir, file, fn) => {
  const p = path.join(dir, file);
  const v = JSON.parse(fs.readFileSync(p, 'utf8'));
  fn(v);
  fs.writeFileSync(p, JSON.stringify(v, null, 2));
};

// Each case: [what the validator must say, how to break the copy].
const cases = {
  // zapier-platform-schema: a create needs a noun.
  'zapier-no-noun': ['requires property "noun"', (d) => edit(d, 'imgflow-zapier-app.json', (a) => delete a.creates.get_job.noun)],
  // zapier-platform-schema: only known auth types.
  'zapier-bad-auth': ['authentication', (d) => edit(d, 'imgflow-zapier-app.json', (a) => (a.authentication.type = 'api_key'))],
  // The CLI project: a file output with no hydrator to stash it.
  'zapier-cli-no-hydrator': ['no hydrators.compressedFile', (d) => {
    const p = path.join(d, 'index.js');
    fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace('"hydrators": hydrators,', ''));
  }],
  // n8n: an unknown node type (a typo) and a dangling connection.
  'n8n-unknown-node': ['unknown node type', (d) => edit(d, 'compress-image-wait.json', (w) => (w.nodes[1].type = 'n8n-nodes-base.httpRequestV5'))],
  'n8n-dangling-connection': ['missing node', (d) => edit(d, 'compress-image-callback.json', (w) => (w.connections.Start.main[0][0].node = 'Nowhere'))],
  'n8n-inline-key': ['inline', (d) => edit(d, 'compress-image-wait.json', (w) => {
    const n = w.nodes.find((x) => x.type === 'n8n-nodes-base.httpRequest');
    delete n.credentials;
    n.parameters.sendHeaders = true;
    n.parameters.headerParameters = { parameters: [{ name: 'X-API-Key', value: 'sk_live_123' }] };
  })],
  'n8n-wait-get': ['imgflow callbacks POST', (d) => edit(d, 'compress-image-callback.json', (w) => delete w.nodes.find((n) => n.type === 'n8n-nodes-base.wait').parameters.httpMethod)],
  'n8n-wait-unlimited': ['without limitWaitTime', (d) => edit(d, 'compress-image-callback.json', (w) => delete w.nodes.find((n) => n.type === 'n8n-nodes-base.wait').parameters.limitWaitTime)],
  'n8n-batch-no-archive': ['no HTTP Request returns the compressed image as a file', (d) => edit(d, 'batch-finished-webhook.json', (w) => {
    w.nodes = w.nodes.filter((n) => n.name !== 'Download Archive');
  })],
  'n8n-unverified-webhook': ['does not verify', (d) => edit(d, 'job-finished-webhook.json', (w) => (w.nodes.find((n) => n.type === 'n8n-nodes-base.webhook').parameters.options = {}))],
  // Make schemas: a parameter needs a non-empty name; a request's method is an enum.
  'make-bad-param': ['parameters.json', (d) => edit(d, 'module-compressImage.mappable-params.iml.json', (p) => (p[0].name = ''))],
  'make-bad-method': ['api.json', (d) => edit(d, 'webhook-jobFinished.attach.iml.json', (a) => (a.method = 'SEND'))],
  // Power Automate: Microsoft's schema and swagger-cli reject a definition without info;
  // paconn's schema rejects an unknown connection parameter type.
  // The Copilot Studio variant must say it is an MCP endpoint.
  'powerautomate-mcp-no-protocol': ['no operation with x-ms-agentic-protocol', (d) => edit(d, 'mcp.apiDefinition.swagger.json', (s) => delete s.paths['/mcp'].post['x-ms-agentic-protocol'])],
  'powerautomate-no-info': ['swagger-cli', (d) => edit(d, 'apiDefinition.swagger.json', (s) => delete s.info)],
  'powerautomate-bad-trigger': ['apiDefinition (schema)', (d) => edit(d, 'apiDefinition.swagger.json', (s) => (s.paths['/v1/hooks'].post['x-ms-trigger'] = 'sometimes'))],
  'powerautomate-bad-param-type': ['apiProperties (schema)', (d) => edit(d, 'apiProperties.json', (p) => (p.properties.connectionParameters.api_key.type = 'password'))],
  // Power Automate: an answer without the compressed file as file content.
  'powerautomate-no-file-out': ['answers no file content', (d) => edit(d, 'apiDefinition.swagger.json', (s) => delete s.definitions.Job.properties.result.properties.compressed_data.format)],
  // OpenAPI: a $ref to a schema that does not exist.
  'openapi-missing-ref': ['Nope', (d) => edit(d, 'openapi.json', (o) => (o.paths['/v1/account'].get.responses['200'].content['application/json'].schema.$ref = '#/components/schemas/Nope'))],
};

const [name, src, dst] = process.argv.slice(2);
if (name === 'list') {
  console.log(Object.keys(cases).join('\n'));
  process.exit(0);
}
if (!cases[name]) {
  console.error(`unknown case ${name}`);
  process.exit(2);
}
fs.mkdirSync(dst, { recursive: true });
for (const f of fs.readdirSync(src)) fs.copyFileSync(path.join(src, f), path.join(dst, f));
cases[name][1](dst);
console.log(cases[name][0]);
