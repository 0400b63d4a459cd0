'use strict';
// Checks n8n workflow exports without n8n itself (2.3 GB): node types and
// typeVersions from a list of built-in nodes, the parameters those nodes
// take, connections between existing nodes, credentials by reference only,
// and the callback pattern (resumeUrl sent, Wait node resumed by POST).
const fs = require('fs');
const path = require('path');

// Built-in node types this project may use, with their published typeVersions
// and the top-level parameters each accepts.
const NODES = {
  'n8n-nodes-base.manualTrigger': { versions: [1], params: ['notice'], trigger: true },
  'n8n-nodes-base.scheduleTrigger': { versions: [1, 1.1, 1.2], params: ['rule'], trigger: true },
  'n8n-nodes-base.webhook': {
    versions: [1, 1.1, 2, 2.1],
    params: ['httpMethod', 'path', 'authentication', 'responseMode', 'responseCode', 'responseData', 'responseBinaryPropertyName', 'options', 'multipleMethods'],
    required: ['path'],
    trigger: true,
    webhook: true,
  },
  'n8n-nodes-base.httpRequest': {
    versions: [1, 2, 3, 4, 4.1, 4.2, 4.3, 4.4, 4.5],
    params: ['method', 'url', 'authentication', 'genericAuthType', 'nodeCredentialType', 'provideSslCertificates', 'sendQuery', 'specifyQuery', 'queryParameters', 'jsonQuery', 'sendHeaders', 'specifyHeaders', 'headerParameters', 'jsonHeaders', 'sendBody', 'contentType', 'specifyBody', 'bodyParameters', 'jsonBody', 'body', 'rawContentType', 'inputDataFieldName', 'options'],
    required: ['url'],
  },
  'n8n-nodes-base.wait': {
    versions: [1, 1.1],
    params: ['resume', 'amount', 'unit', 'dateTime', 'httpMethod', 'responseCode', 'responseMode', 'responseData', 'limitWaitTime', 'limitType', 'resumeAmount', 'resumeUnit', 'maxDateAndTime', 'incomingAuthentication', 'options'],
    webhook: true,
  },
  'n8n-nodes-base.if': { versions: [1, 2, 2.1, 2.2, 2.3], params: ['conditions', 'combineOperation', 'looseTypeValidation', 'options'] },
  'n8n-nodes-base.set': { versions: [1, 2, 3, 3.1, 3.2, 3.3, 3.4], params: ['mode', 'fields', 'assignments', 'includeOtherFields', 'include', 'options', 'values', 'keepOnlySet'] },
  'n8n-nodes-base.noOp': { versions: [1], params: [] },
  'n8n-nodes-base.respondToWebhook': { versions: [1, 1.1, 1.2, 1.3, 1.4, 1.5], params: ['respondWith', 'responseBody', 'options'] },
  'n8n-nodes-base.stickyNote': { versions: [1], params: ['content', 'height', 'width', 'color'] },
  'n8n-nodes-base.readWriteFile': { versions: [1, 1.1], params: ['operation', 'fileSelector', 'fileName', 'dataPropertyName', 'options'] },
  'n8n-nodes-base.code': { versions: [1, 2], params: ['mode', 'language', 'jsCode', 'pythonCode', 'notice'] },
  'n8n-nodes-base.stopAndError': { versions: [1], params: ['errorType', 'errorMessage', 'errorObject'] },
};
const ENUMS = {
  'n8n-nodes-base.httpRequest': {
    method: ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'],
    authentication: ['none', 'predefinedCredentialType', 'genericCredentialType'],
    genericAuthType: ['httpBasicAuth', 'httpDigestAuth', 'httpHeaderAuth', 'httpQueryAuth', 'httpCustomAuth', 'oAuth1Api', 'oAuth2Api'],
    specifyBody: ['keypair', 'json'],
  },
  'n8n-nodes-base.wait': { resume: ['timeInterval', 'specificTime', 'webhook', 'form'], httpMethod: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT'] },
  'n8n-nodes-base.webhook': { httpMethod: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT'], responseMode: ['onReceived', 'lastNode', 'responseNode'] },
};
// What a key or secret looks like if someone pasted it into a workflow.
const INLINE_SECRET = /(x-api-key|authorization|bearer\s|sk_[a-z0-9]|whsec_)/i;
// A Sticky Note may name the header; only a value pasted there is a leak.
const INLINE_SECRET_VALUE = /(bearer\s|sk_[a-z0-9]|whsec_)/i;

function checkWorkflow(name, wf) {
  const p = [];
  const say = (m) => p.push(`${name}: ${m}`);
  if (typeof wf.name !== 'string' || !wf.name) say('no workflow name');
  if (!Array.isArray(wf.nodes) || wf.nodes.length === 0) return [...p, `${name}: no nodes`];
  if (!wf.connections || typeof wf.connections !== 'object') say('no connections object');
  const byName = new Map();
  const ids = new Set();
  for (const n of wf.nodes) {
    const where = `node "${n.name}"`;
    if (byName.has(n.name)) say(`${where} name is not unique`);
    byName.set(n.name, n);
    if (!n.id || ids.has(n.id)) say(`${where} has no unique id`);
    ids.add(n.id);
    const spec = NODES[n.type];
    if (!spec) {
      say(`${where} has unknown node type ${n.type}`);
      continue;
    }
    if (!spec.versions.includes(n.typeVersion)) say(`${where} ${n.type} has no typeVersion ${n.typeVersion} (known: ${spec.versions.join(', ')})`);
    if (!Array.isArray(n.position) || n.position.length !== 2) say(`${where} has no [x, y] position`);
    const params = n.parameters || {};
    for (const k of Object.keys(params)) if (!spec.params.includes(k)) say(`${where} has unknown parameter ${k}`);
    for (const k of spec.required || []) if (!params[k]) say(`${where} lacks parameter ${k}`);
    for (const [k, allowed] of Object.entries(ENUMS[n.type] || {})) {
      if (k in params && !allowed.includes(params[k])) say(`${where} parameter ${k}=${params[k]} is not one of ${allowed.join(', ')}`);
    }
    if (spec.webhook && n.type !== 'n8n-nodes-base.wait' && !n.webhookId) say(`${where} has no webhookId`);
    const leak = n.type === 'n8n-nodes-base.stickyNote' ? INLINE_SECRET_VALUE : INLINE_SECRET;
    if (leak.test(JSON.stringify(params))) say(`${where} has a key or auth header inline; use credentials`);
    if (params.authentication === 'genericCredentialType') {
      const cred = (n.credentials || {})[params.genericAuthType];
      if (!cred || !cred.id || !cred.name) say(`${where} uses ${params.genericAuthType} without a credential reference {id, name}`);
    }
    for (const [type, cred] of Object.entries(n.credentials || {})) {
      const keys = Object.keys(cred || {}).sort().join(',');
      if (keys !== 'id,name') say(`${where} credential ${type} must be a reference {id, name}, has ${keys}`);
    }
    if (n.type === 'n8n-nodes-base.wait' && params.resume === 'webhook' && params.httpMethod !== 'POST') {
      say(`${where} resumes on ${params.httpMethod || 'GET (the default)'}, but imgflow callbacks POST`);
    }
    if (n.type === 'n8n-nodes-base.wait' && params.resume === 'webhook' && params.limitWaitTime !== true) {
      say(`${where} waits for a callback without limitWaitTime: a lost callback would hold the execution forever`);
    }
  }
  const incoming = new Set();
  for (const [from, outs] of Object.entries(wf.connections || {})) {
    if (!byName.has(from)) say(`connection from missing node "${from}"`);
    for (const [type, branches] of Object.entries(outs || {})) {
      if (!Array.isArray(branches)) {
        say(`connections of "${from}" ${type} are not a list`);
        continue;
      }
      for (const branch of branches) {
        for (const c of branch || []) {
          if (!byName.has(c.node)) say(`connection from "${from}" to missing node "${c.node}"`);
          if (c.type !== 'main' || !Number.isInteger(c.index)) say(`connection "${from}" -> "${c.node}" is not main/index`);
          incoming.add(c.node);
        }
      }
    }
  }
  for (const n of wf.nodes) {
    const spec = NODES[n.type];
    if (spec && !spec.trigger && n.type !== 'n8n-nodes-base.stickyNote' && !incoming.has(n.name)) say(`node "${n.name}" is never reached`);
  }
  if (!wf.nodes.some((n) => NODES[n.type] && NODES[n.type].trigger)) say('no trigger node');
  const waits = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.wait' && (n.parameters || {}).resume === 'webhook');
  if (waits.length && !JSON.stringify(wf.nodes).includes('$execution.resumeUrl')) say('a Wait node waits for a webhook but no node sends $execution.resumeUrl');
  // Usable by a new user: the setup on the canvas, failed jobs stop the
  // workflow, files go in as multipart uploads and come out as files.
  if (!wf.nodes.some((n) => n.type === 'n8n-nodes-base.stickyNote' && /setup|subscribe|credential/i.test((n.parameters || {}).content || ''))) {
    say('no Sticky Note with the setup');
  }
  if (!wf.nodes.some((n) => n.type === 'n8n-nodes-base.if') || !wf.nodes.some((n) => n.type === 'n8n-nodes-base.stopAndError')) {
    say('no If / Stop And Error branch for failed jobs');
  }
  const http = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.httpRequest').map((n) => n.parameters || {});
  const creates = http.filter((p) => p.method === 'POST' && /\/v1\/jobs/.test(p.url || ''));
  for (const c of creates) {
    const file = ((c.bodyParameters || {}).parameters || []).some((b) => b.parameterType === 'formBinaryData');
    if (c.contentType !== 'multipart-form-data' || !file) say('a job is created without uploading the incoming binary (multipart formBinaryData)');
  }
  const downloads = http.filter((p) => (((p.options || {}).response || {}).response || {}).responseFormat === 'file');
  // A webhook for job or batch events hands the compressed file(s) on; one
  // for another event (account.credits_low) has none to hand on.
  const setup = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.stickyNote').map((n) => (n.parameters || {}).content || '').join('\n');
  const fileHook = wf.nodes.some((n) => n.type === 'n8n-nodes-base.webhook') && /"event": ?"(job|batch)\./.test(setup);
  if ((creates.length || fileHook) && !downloads.length) say('no HTTP Request returns the compressed image as a file');
  const hooks = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.webhook');
  for (const h of hooks) {
    const code = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.code').map((n) => (n.parameters || {}).jsCode || '').join('\n');
    if (!((h.parameters || {}).options || {}).rawBody || !/webhook-signature/.test(code) || !/createHmac/.test(code)) {
      say(`webhook "${h.name}" does not verify the Standard Webhooks signature over the raw body`);
    }
  }
  return p;
}

module.exports = async function checkN8n(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  const problems = [];
  if (files.length < 3) problems.push(`expected 3 workflows, found ${files.length}`);
  const all = [];
  for (const f of files) {
    let wf;
    try {
      wf = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    } catch (err) {
      problems.push(`${f}: not JSON: ${err.message}`);
      continue;
    }
    all.push(wf);
    problems.push(...checkWorkflow(f, wf));
  }
  const text = JSON.stringify(all);
  if (!text.includes('"n8n-nodes-base.webhook"')) problems.push('no Webhook-trigger workflow for hook subscriptions');
  if (!text.includes('$execution.resumeUrl')) problems.push('no callback workflow sending $execution.resumeUrl');
  return problems;
};
