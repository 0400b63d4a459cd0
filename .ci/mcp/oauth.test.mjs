// The official MCP TypeScript SDK's OAuth flow against a live `imgflow dev`
// (started by ../mcp.sh, which sets IMGFLOW_URL and IMGFLOW_KEY), as a chat
// app's connector runs it: discovery from the 401, dynamic registration,
// authorization with PKCE where a person fills the consent page (headless
// Chromium through playwright-core, Debian's chromium, never a downloaded
// browser), the code exchange, tools with the token, one refresh (a second
// use is refused and revokes the grant), revocation, and the refusals.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, refreshAuthorization, discoverAuthorizationServerMetadata } from '@modelcontextprotocol/sdk/client/auth.js';

const base = process.env.IMGFLOW_URL;
const key = process.env.IMGFLOW_KEY;
if (!base || !key) throw new Error('run through .ci/mcp.sh: IMGFLOW_URL and IMGFLOW_KEY are unset');
const mcpURL = new URL('/mcp', base);
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// The app's redirect target: a loopback server that records each callback's query.
let callbacks;
let redirectUrl;
const waiting = [];
function nextCallback() {
  return new Promise((resolve) => waiting.push(resolve));
}

// MemoryProvider is an OAuthClientProvider that keeps everything in memory
// and records the authorization URL the SDK would open.
class MemoryProvider {
  constructor() { this.authUrl = undefined; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return { client_name: 'imgflow CI agent', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() { this.sentState = crypto.randomUUID(); return this.sentState; }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { this.authUrl = url; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

let browser;
before(async () => {
  callbacks = http.createServer((req, res) => {
    const q = new URL(req.url, 'http://127.0.0.1').searchParams;
    res.end('back in the app');
    waiting.shift()?.(q);
  });
  await new Promise((resolve) => callbacks.listen(0, '127.0.0.1', resolve));
  redirectUrl = `http://127.0.0.1:${callbacks.address().port}/callback`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
});
after(async () => {
  await browser?.close();
  callbacks?.close();
});

// consent opens an authorization URL in Chromium, types the key into the
// consent page and allows; it returns the callback's query.
async function consent(url, { apiKey = key } = {}) {
  const page = await browser.newPage();
  try {
    const back = nextCallback();
    await page.goto(String(url));
    await page.getByLabel('Your imgflow API key').fill(apiKey);
    await page.getByRole('button', { name: 'Allow' }).click();
    try {
      await page.waitForURL((u) => u.href.startsWith(redirectUrl), { timeout: 15000 });
    } catch (err) {
      throw new Error(`the consent page did not go back to the app: ${page.url()}: ${await page.locator('main').innerText()}`);
    }
    return await back;
  } finally {
    await page.close();
  }
}

// authorize runs the SDK's flow from the first 401 to a connected client.
async function authorize(provider) {
  const first = new Client({ name: 'imgflow-ci-oauth', version: '1.0.0' });
  await assert.rejects(first.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider })), UnauthorizedError);
  assert.ok(provider.authUrl, 'the SDK asked to open the authorization page');
  const back = await consent(provider.authUrl);
  assert.equal(back.get('state'), provider.sentState, 'state comes back');
  assert.equal(back.get('iss'), base, 'iss (RFC 9207) is the issuer');
  assert.ok(back.get('code'), `a code comes back: ${back}`);
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  await transport.finishAuth(back.get('code'));
  const client = new Client({ name: 'imgflow-ci-oauth', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider }));
  return client;
}

async function mcpStatus(token) {
  const res = await fetch(mcpURL, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  await res.arrayBuffer();
  return res.status;
}

test('the 401 names the resource metadata, which names the authorization server', async () => {
  const res = await fetch(mcpURL, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate');
  assert.match(challenge, /^Bearer /);
  assert.ok(challenge.includes(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`), challenge);
  assert.ok(!challenge.includes('error='), `no error= without a token (RFC 6750): ${challenge}`);
  const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json();
  assert.equal(prm.resource, mcpURL.href);
  assert.deepEqual(prm.authorization_servers, [base]);
  const as = await discoverAuthorizationServerMetadata(base);
  for (const f of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint']) assert.ok(as[f], f);
  assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
  assert.equal(as.client_id_metadata_document_supported, true);
  assert.equal(as.authorization_response_iss_parameter_supported, true);
});

test('registration, consent in Chromium, code exchange, tools with the token, one refresh', async () => {
  const provider = new MemoryProvider();
  const client = await authorize(provider);
  assert.match(provider.client.client_id, /^ifc_/, 'registered dynamically');
  const tokens = provider.saved;
  assert.notEqual(tokens.access_token, key, 'the access token is not the key');
  assert.equal(tokens.token_type.toLowerCase(), 'bearer');
  assert.ok(tokens.expires_in > 0 && tokens.expires_in <= 3600, `expires within an hour: ${tokens.expires_in}`);
  assert.ok(tokens.refresh_token, 'a refresh token');

  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'check_account'));
  const acct = await client.callTool({ name: 'check_account', arguments: {} });
  assert.equal(acct.isError ?? false, false, JSON.stringify(acct));
  assert.equal(typeof acct.structuredContent.credits_remaining, 'number', 'the key\'s own credits');
  await client.close();

  const metadata = await discoverAuthorizationServerMetadata(base);
  const refreshed = await refreshAuthorization(base, { metadata, clientInformation: provider.client, refreshToken: tokens.refresh_token,
    resource: mcpURL });
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotates');
  assert.equal(await mcpStatus(refreshed.access_token), 200, 'the refreshed token works');
  await assert.rejects(refreshAuthorization(base, { metadata, clientInformation: provider.client, refreshToken: tokens.refresh_token,
    resource: mcpURL }), /invalid_grant|already used/i, 'a refresh token works once');
  assert.equal(await mcpStatus(refreshed.access_token), 401, 'reusing a refresh token revokes its grant');
});

test('a revoked token is refused at once; /v1/connected-apps lists the app', async () => {
  const provider = new MemoryProvider();
  const client = await authorize(provider);
  await client.close();
  const token = provider.saved.access_token;
  assert.equal(await mcpStatus(token), 200);
  const apps = await (await fetch(`${base}/v1/connected-apps`, { headers: { 'X-API-Key': key } })).json();
  assert.ok(apps.apps.some((a) => a.client_id === provider.client.client_id && a.client_name === 'imgflow CI agent'), JSON.stringify(apps));
  const res = await fetch(`${base}/revoke`, { method: 'POST', body: new URLSearchParams({ token, client_id: provider.client.client_id }) });
  assert.equal(res.status, 200);
  const status = await fetch(mcpURL, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: '{}' });
  assert.equal(status.status, 401, 'refused right after revocation');
  assert.match(status.headers.get('www-authenticate'), /error="invalid_token"/);
});

test('the console lists the connected app and its Revoke stops the token', async () => {
  const provider = new MemoryProvider();
  const client = await authorize(provider);
  await client.close();
  const token = provider.saved.access_token;
  const page = await browser.newPage();
  try {
    await page.goto(base + '/');
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Apps', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: provider.client.client_id });
    await row.getByRole('button', { name: 'Revoke imgflow CI agent' }).click();
    await page.getByText('imgflow CI agent revoked').waitFor();
    assert.equal(await row.count(), 0, 'the app is no longer listed');
  } finally {
    await page.close();
  }
  assert.equal(await mcpStatus(token), 401, 'the revoked app\'s token is refused');
});

test('authorize without PKCE, with plain PKCE, or with a foreign redirect URI is refused', async () => {
  const provider = new MemoryProvider();
  const first = new Client({ name: 'imgflow-ci-oauth', version: '1.0.0' });
  await assert.rejects(first.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider })), UnauthorizedError);
  const good = new URL(provider.authUrl);

  const noPKCE = new URL(good);
  noPKCE.searchParams.delete('code_challenge');
  noPKCE.searchParams.delete('code_challenge_method');
  let res = await fetch(noPKCE, { redirect: 'manual' });
  assert.equal(res.status, 303);
  let back = new URL(res.headers.get('location'));
  assert.equal(back.origin + back.pathname, redirectUrl);
  assert.equal(back.searchParams.get('error'), 'invalid_request');
  assert.equal(back.searchParams.get('code'), null);

  const plain = new URL(good);
  plain.searchParams.set('code_challenge_method', 'plain');
  res = await fetch(plain, { redirect: 'manual' });
  back = new URL(res.headers.get('location'));
  assert.equal(back.searchParams.get('error'), 'invalid_request');

  const foreign = new URL(good);
  foreign.searchParams.set('redirect_uri', 'https://attacker.example/callback');
  res = await fetch(foreign, { redirect: 'manual' });
  assert.equal(res.status, 400, 'a redirect URI the client did not register is refused on the page');
  assert.equal(res.headers.get('location'), null, 'and never redirected to');
});

test('a Bearer API key still connects', async () => {
  const client = new Client({ name: 'imgflow-ci', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpURL, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const acct = await client.callTool({ name: 'check_account', arguments: {} });
  assert.equal(acct.isError ?? false, false);
  await client.close();
});
