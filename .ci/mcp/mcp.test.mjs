// The official MCP TypeScript SDK's client against a live `imgflow dev`
// (started by ../mcp.sh, which sets IMGFLOW_URL and IMGFLOW_KEY): every tool
// listed with its schemas and annotations, and called as an agent would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const base = process.env.IMGFLOW_URL;
const key = process.env.IMGFLOW_KEY;
if (!base || !key) throw new Error('run through .ci/mcp.sh: IMGFLOW_URL and IMGFLOW_KEY are unset');
const images = new URL('../../fixtures/images/', import.meta.url);

async function connect(headers = { Authorization: `Bearer ${key}` }) {
  const client = new Client({ name: 'imgflow-ci', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers } }));
  return client;
}

let client;
before(async () => { client = await connect(); });
after(async () => { await client?.close(); });

const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// expectCompressed checks a completed job's result: structuredContent with
// sizes, and a resource_link that downloads the smaller file without the key.
async function expectCompressed(res, mime) {
  assert.equal(res.isError ?? false, false, text(res));
  const job = res.structuredContent;
  assert.equal(job.status, 'completed', text(res));
  assert.ok(job.result.compressed_size < job.result.original_size, 'smaller');
  assert.equal(typeof job.result.credits_remaining, 'number');
  const link = res.content.find((c) => c.type === 'resource_link');
  assert.ok(link, 'a resource_link');
  assert.equal(link.mimeType, mime);
  assert.equal(link.size, job.result.compressed_size);
  const file = await fetch(link.uri);
  assert.equal(file.status, 200);
  assert.equal(file.headers.get('content-type'), mime);
  assert.equal((await file.arrayBuffer()).byteLength, link.size);
  return job;
}

test('every tool is listed with a title, schemas and annotations', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['check_account', 'check_image', 'compress_image', 'compress_many', 'compress_variants', 'get_job', 'list_jobs', 'prepare_upload']);
  for (const t of tools) {
    assert.ok(t.title && t.description, `${t.name} title and description`);
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.outputSchema.type, 'object', t.name);
    for (const hint of ['readOnlyHint', 'idempotentHint', 'destructiveHint', 'openWorldHint']) {
      assert.equal(typeof t.annotations[hint], 'boolean', `${t.name} ${hint}`);
    }
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.equal(byName.get_job.annotations.readOnlyHint, true);
  assert.equal(byName.compress_image.annotations.readOnlyHint, false);
  assert.equal(byName.compress_image.annotations.destructiveHint, false);
  for (const f of ['image_url', 'image_base64', 'upload', 'idempotency_key', 'filename', 'dedupe']) {
    assert.ok(byName.compress_image.inputSchema.properties[f], `compress_image takes ${f}`);
  }
});

test('a set of sizes: a link per size, the srcset and the ZIP', async () => {
  const res = await client.callTool({ name: 'compress_variants', arguments: { image_url: `${base}/samples/photo.jpg`, filename: 'photo.jpg',
    variants: [{ id: 'sm', resize: '160x', convert: 'webp' }, { id: 'md', resize: '240x' }], wait_seconds: 20 } });
  assert.equal(res.isError ?? false, false, text(res));
  const set = res.structuredContent;
  assert.equal(set.status, 'finished', text(res));
  assert.equal(set.counts.completed, 2, text(res));
  assert.match(set.srcset, / 240w$/);
  const links = res.content.filter((c) => c.type === 'resource_link');
  assert.deepEqual(links.map((l) => l.mimeType).sort(), ['application/zip', 'image/jpeg', 'image/webp']);
  for (const l of links) {
    const file = await fetch(l.uri);
    assert.equal(file.status, 200, l.uri);
    await file.arrayBuffer();
  }
});

test('compress by URL, with a preview when asked', async () => {
  const res = await client.callTool({ name: 'compress_image', arguments: { image_url: `${base}/samples/photo.jpg`, preview: true } });
  await expectCompressed(res, 'image/jpeg');
  const img = res.content.find((c) => c.type === 'image');
  assert.ok(img && img.data.length > 0 && img.data.length < 100_000, 'a small preview');
});

test('compress small base64', async () => {
  const png = await readFile(new URL('screenshot.png', images));
  const res = await client.callTool({ name: 'compress_image', arguments: { image_base64: png.toString('base64'), filename: 'shot.png' } });
  await expectCompressed(res, 'image/png');
  assert.ok(!res.content.some((c) => c.type === 'image'), 'no preview unless asked');
});

test('compress by upload handle: prepare_upload, PUT, compress', async () => {
  const prep = await client.callTool({ name: 'prepare_upload', arguments: { name: 'photo.webp', mimeType: 'image/webp' } });
  const { file, transfer } = prep.structuredContent;
  assert.equal(transfer.method, 'PUT');
  assert.ok(!transfer.url.includes(key), 'no key in the upload URL');
  const put = await fetch(transfer.url, { method: 'PUT', headers: transfer.headers, body: await readFile(new URL('photo.webp', images)) });
  assert.equal(put.status, 200);
  const res = await client.callTool({ name: 'compress_image', arguments: { upload: file.uri } });
  const job = await expectCompressed(res, 'image/webp');
  assert.equal(job.result.filename, 'photo.webp');
});

test('a slow image answers running, and get_job finishes it', async () => {
  let release;
  const released = new Promise((r) => { release = r; });
  const png = await readFile(new URL('photo.png', images));
  const slow = http.createServer(async (req, res) => { await released; res.writeHead(200, { 'Content-Type': 'image/png' }); res.end(png); });
  await new Promise((r) => slow.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${slow.address().port}/slow.png`;
    const res = await client.callTool({ name: 'compress_image', arguments: { image_url: url, wait_seconds: 1, dedupe: false } });
    assert.equal(res.isError ?? false, false, text(res));
    assert.ok(['queued', 'processing'].includes(res.structuredContent.status), text(res));
    assert.match(text(res), /get_job/);
    release();
    const done = await client.callTool({ name: 'get_job', arguments: { id: res.structuredContent.id } });
    await expectCompressed(done, 'image/png');
  } finally {
    release();
    slow.close();
  }
});

test('a retried call with the same idempotency_key charges once', async () => {
  const credits = async () => (await client.callTool({ name: 'check_account', arguments: {} })).structuredContent.credits_remaining;
  const before = await credits();
  const args = { image_url: `${base}/samples/screenshot.jpg`, dedupe: false, idempotency_key: `ci-${Date.now()}` };
  const first = await client.callTool({ name: 'compress_image', arguments: args });
  const again = await client.callTool({ name: 'compress_image', arguments: args });
  await expectCompressed(first, 'image/jpeg');
  assert.equal(again.structuredContent.id, first.structuredContent.id);
  assert.equal(await credits(), before - 1);
});

test('a bad image is a tool error with the REST code', async () => {
  const res = await client.callTool({ name: 'compress_image', arguments: { image_base64: Buffer.from('not an image').toString('base64') } });
  assert.equal(res.isError, true);
  assert.equal(res.structuredContent.error.code, 'unsupported_format');
  const rest = await fetch(`${base}/v1/jobs`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ image_base64: Buffer.from('not an image').toString('base64') }) });
  assert.equal((await rest.json()).code, 'unsupported_format');
});

test('check_image and check_account agree with the REST API', async () => {
  const check = await client.callTool({ name: 'check_image', arguments: { image_url: `${base}/samples/photo.png` } });
  const rest = await fetch(`${base}/v1/jobs/dry-run`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ image_url: `${base}/samples/photo.png` }) });
  assert.deepEqual(check.structuredContent, await rest.json());
  assert.ok(check.structuredContent.input.width > 0);
  const acct = await client.callTool({ name: 'check_account', arguments: {} });
  const restAcct = await (await fetch(`${base}/v1/account`, { headers: { 'X-API-Key': key } })).json();
  assert.equal(acct.structuredContent.credits_remaining, restAcct.credits_remaining);
  assert.equal(acct.structuredContent.webhook_secret, undefined);
});

test('compress_many and list_jobs', async () => {
  const many = await client.callTool({ name: 'compress_many', arguments: { items: [
    { image_url: `${base}/samples/photo.jpg` }, { image_url: `${base}/samples/screenshot.png` },
  ] } });
  assert.equal(many.isError ?? false, false, text(many));
  assert.equal(many.structuredContent.counts.total, 2);
  assert.equal(many.structuredContent.jobs.length, 2);
  assert.ok(many.content.filter((c) => c.type === 'resource_link').length >= 2);
  const list = await client.callTool({ name: 'list_jobs', arguments: { limit: 3 } });
  assert.equal(list.structuredContent.jobs.length, 3);
});

test('nothing works without a key: 401 with WWW-Authenticate', async () => {
  for (const headers of [{}, { Authorization: 'Bearer not-a-key' }, { 'X-API-Key': 'nope' }]) {
    const res = await fetch(new URL('/mcp', base), { method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer /);
  }
  await assert.rejects(connect({ Authorization: 'Bearer not-a-key' }));
});
