// Browser tests of operating webhooks in the console: the
// Deliveries page across jobs (filters, Load more, Redeliver), and the
// Hooks page's events, threshold, Send test, Enable, Recover and Rotate
// secret, and the callback secret's rotation on the Connect page. Against
// a live `imgflow dev` with receivers on loopback that check signatures,
// fail with 500, or answer 410. The tests run in order on one page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createHmac, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startImgflow, startReceiver, launchBrowser, until, signIn, createJob } from './harness.js';

const images = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'fixtures', 'images');

let imgflow, browser, page;
let checker; // answers 204 when a signature verifies with one of checkerSecrets, else 401
let failing; // answers 500
let gone; // answers 410 until goneAnswers is 200
let checkerSecrets = [];
let goneStatus = 410;
const problems = [];
const requests = [];
const hooks = {}; // name → hook as the API created it

// signatures are the base64 HMACs of a request's webhook-signature header
// ("v1,<sig> v1,<sig>").
function signatures(r) {
  return String(r.headers['webhook-signature'] || '').split(' ').filter(Boolean).map((s) => s.replace(/^v1,/, ''));
}

// signedBy says whether sig is the Standard Webhooks signature of request r
// with secret ("whsec_" + base64 key).
function signedBy(r, sig, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const want = createHmac('sha256', key).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`).digest('base64');
  return sig === want;
}

function verified(r, secrets) {
  return signatures(r).some((sig) => secrets.some((s) => signedBy(r, sig, s)));
}

async function apiCall(method, path, body) {
  const headers = { 'X-API-Key': imgflow.key };
  if (body) headers['Content-Type'] = 'application/json';
  const res = await fetch(imgflow.url + path, { method, headers, body: body && JSON.stringify(body) });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// allDeliveries pages through GET /v1/deliveries with the given filters.
async function allDeliveries(filters = {}) {
  const out = [];
  let cursor = '';
  do {
    const q = new URLSearchParams({ ...filters, limit: '100' });
    if (cursor) q.set('cursor', cursor);
    const page = await apiCall('GET', `/v1/deliveries?${q}`);
    out.push(...page.deliveries);
    cursor = page.next_cursor || '';
  } while (cursor);
  return out;
}

async function job(file) {
  return createJob(imgflow, { bytes: await readFile(join(images, file)), name: file });
}

const rows = () => page.locator('#dlv-table tbody tr');
const rowIDs = () => rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.delivery));
const hookRow = (name) => page.locator('#hooks-table tbody tr[data-hook]').filter({ hasText: hooks[name].target_url });

// showDeliveries opens the Deliveries page with the filters chosen and
// waits for the list to be the API's first page for the same filters.
async function showDeliveries({ status = '', hook = '' } = {}) {
  if (!page.url().endsWith('#/deliveries')) await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
  const hookID = hook ? hooks[hook].id : '';
  await until('the hook filter filled', async () => (await page.locator('#dlv-hook option').count()) > Object.keys(hooks).length);
  await page.locator('#view-deliveries').getByLabel('Status', { exact: true }).selectOption(status);
  await page.locator('#dlv-hook').selectOption(hookID);
  const filters = {};
  if (status) filters.status = status;
  if (hookID) filters.hook_id = hookID;
  const q = new URLSearchParams({ ...filters, limit: '25' });
  const want = (await apiCall('GET', `/v1/deliveries?${q}`)).deliveries.map((d) => d.id);
  await until(`the deliveries listed for ${JSON.stringify(filters)}`, async () =>
    !(await page.locator('#dlv-table').getAttribute('aria-busy')) && JSON.stringify(await rowIDs()) === JSON.stringify(want));
  return want;
}

before(async () => {
  imgflow = await startImgflow();
  checker = await startReceiver((r) => (verified(r, checkerSecrets) ? { status: 204, body: '' } : { status: 401, body: 'bad signature' }));
  failing = await startReceiver(() => ({ status: 500, body: 'receiver down' }));
  gone = await startReceiver(() => ({ status: goneStatus, body: goneStatus === 410 ? 'gone for good' : 'back' }));
  browser = await launchBrowser();
  browser.context.on('request', (r) => requests.push({ url: r.url(), headers: r.headers() }));
  page = await browser.context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`${m.text()} (${m.location().url})`); });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.setDefaultTimeout(30000);
  await signIn(page, imgflow);
});

after(async () => {
  await browser?.close();
  for (const r of [checker, failing, gone]) await r?.stop();
  await imgflow?.stop();
});

test('the Hooks page offers every event the server lists, with a threshold only for account.credits_low', async () => {
  await page.getByRole('link', { name: 'Hooks' }).click();
  const listed = (await apiCall('GET', '/v1/event-types')).event_types.map((t) => t.type);
  assert.ok(listed.includes('account.credits_low') && listed.includes('hook.disabled'), listed.join());
  const want = ['job.finished', ...listed.filter((t) => t !== 'hook.test')];
  await until('the events from /v1/event-types', async () =>
    JSON.stringify(await page.locator('#hook-event option').evaluateAll((o) => o.map((x) => x.value))) === JSON.stringify(want));

  const threshold = page.getByLabel('Threshold (credits)');
  assert.equal(await threshold.isVisible(), false, 'no threshold for job.finished');
  await page.getByLabel('Event', { exact: true }).selectOption('account.credits_low');
  await threshold.waitFor({ state: 'visible' });
  assert.equal(await threshold.inputValue(), '50', 'the default threshold');
  assert.match(await page.locator('#hook-event-about').textContent(), /threshold/);
  await page.getByLabel('Event', { exact: true }).selectOption('job.failed');
  await threshold.waitFor({ state: 'hidden' });
  await page.getByLabel('Event', { exact: true }).selectOption('account.credits_low');
  await threshold.fill('7');
  await page.getByLabel('Target URL').fill(`${checker.url}/low`);
  await page.getByRole('button', { name: 'Create hook' }).click();
  const row = page.locator('#hooks-table tbody tr').filter({ hasText: `${checker.url}/low` });
  await row.waitFor();
  assert.match(await row.textContent(), /account\.credits_low \(≤\u00a07 credits\).*Active/);
  const made = (await apiCall('GET', '/v1/hooks')).hooks.find((h) => h.target_url === `${checker.url}/low`);
  assert.equal(made.event, 'account.credits_low');
  assert.equal(made.threshold, 7);
  assert.equal(await threshold.isVisible(), false, 'the form is back to job.finished');
  await apiCall('DELETE', `/v1/hooks/${made.id}`);
});

test('Send test: a receiver that checks the signature answers, and the console shows its answer', async () => {
  await page.getByLabel('Target URL').fill(`${checker.url}/signed`);
  await page.getByLabel('Event', { exact: true }).selectOption('job.completed');
  await page.getByRole('button', { name: 'Create hook' }).click();
  const secret = await until('the secret shown', async () => {
    const v = await page.getByLabel('Hook secret').inputValue();
    return v.startsWith('whsec_') && v;
  });
  hooks.signed = (await apiCall('GET', '/v1/hooks')).hooks.find((h) => h.target_url === `${checker.url}/signed`);
  checkerSecrets = [secret];

  const row = hookRow('signed');
  await row.getByRole('button', { name: `Send test to ${checker.url}/signed` }).click();
  await page.getByRole('status').filter({ hasText: `Test to ${checker.url}/signed: delivered, HTTP 204 in` }).waitFor();
  const panel = page.locator(`tr.hook-detail[data-detail-of="${hooks.signed.id}"]`);
  assert.equal(await panel.locator('.test-code').textContent(), '204');
  assert.match(await panel.locator('.test-duration').textContent(), /^\d+ ms$/);
  const got = checker.requests.filter((r) => r.url === '/signed');
  assert.equal(got.length, 1);
  assert.equal(JSON.parse(got[0].body).type, 'hook.test');
  assert.ok(verified(got[0], [secret]), 'signed with the secret shown at creation');
  assert.equal(await panel.locator('dd code').last().textContent(), got[0].headers['webhook-id']);

  // With another secret the receiver refuses it: the console shows the 401
  // and the start of the answer.
  checkerSecrets = ['whsec_' + randomBytes(24).toString('base64')];
  await row.getByRole('button', { name: `Send test to ${checker.url}/signed` }).click();
  await page.getByRole('status').filter({ hasText: `Test to ${checker.url}/signed: failed, HTTP 401 in` }).waitFor();
  assert.equal(await panel.locator('.test-code').textContent(), '401');
  assert.equal(await panel.locator('.test-response').textContent(), 'bad signature');
  assert.ok(await panel.locator('.test-error').count() === 1, 'the error shown');
  checkerSecrets = [secret];
});

test('the Deliveries page lists a failing receiver\'s deliveries across jobs, filtered by status and hook', async () => {
  hooks.failing = await apiCall('POST', '/v1/hooks', { target_url: `${failing.url}/fail`, event: 'job.completed' });
  const jobs = [await job('photo.png'), await job('photo.jpg')];
  await until('both jobs delivered to the failing receiver', () => failing.requests.length >= 2);
  await until('both deliveries recorded', async () =>
    (await allDeliveries({ hook_id: hooks.failing.id })).filter((d) => d.attempts.length > 0).length === 2);
  await until('the good receiver got both jobs', async () =>
    (await allDeliveries({ hook_id: hooks.signed.id, status: 'delivered' })).filter((d) => d.job_id).length === 2);

  // All deliveries, newest first, as the API lists them.
  const all = await showDeliveries();
  assert.ok(all.length >= 6, `2 tests and 4 job deliveries, got ${all.length}`);
  const failRows = rows().filter({ hasText: `${failing.url}/fail` });
  assert.equal(await failRows.count(), 2);
  for (let i = 0; i < 2; i++) {
    const text = await failRows.nth(i).innerText();
    assert.match(text, /job\.completed/);
    assert.match(text, /HTTP 500/);
    assert.match(text, new RegExp(`hook …${hooks.failing.id.slice(-8)}`));
  }
  // Newest first: the second job's delivery is above the first's.
  const links = await failRows.getByRole('link').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  assert.deepEqual(links, jobs.map((j) => `#/jobs/${j.id}`).reverse());
  const test = rows().filter({ hasText: 'hook.test' }).first();
  assert.equal(await test.getByRole('link').count(), 0, 'a test event is no job\'s');
  assert.equal(await test.getByRole('button').count(), 0, 'and has no redelivery route');

  // By hook: only the failing receiver's.
  const byHook = await showDeliveries({ hook: 'failing' });
  assert.equal(byHook.length, 2);
  assert.equal(await rows().filter({ hasText: `${failing.url}/fail` }).count(), 2);

  // By status: what is still retrying is pending; the delivered ones are not.
  const pending = await showDeliveries({ status: 'pending' });
  assert.ok(pending.length >= 2);
  for (const s of await rows().locator('.badge').allTextContents()) assert.equal(s, 'pending');
  assert.equal(await rows().filter({ hasText: `${checker.url}/signed` }).count(), 0);
  await showDeliveries({ status: 'delivered', hook: 'failing' });
  await page.getByText('No deliveries match these filters.').waitFor();
  const delivered = await showDeliveries({ status: 'delivered', hook: 'signed' });
  assert.equal(delivered.length, 3, 'the first test and two jobs');

  // A job's delivery is sent again from here.
  await showDeliveries({ hook: 'failing' });
  const before = failing.requests.length;
  const first = rows().first();
  const id = await first.getAttribute('data-delivery');
  await first.getByRole('button', { name: `Redeliver job.completed to ${failing.url}/fail` }).click();
  await page.getByRole('status').filter({ hasText: /^Redelivered job\.completed to .*: \w+ \(HTTP 500\)\.$/ }).waitFor();
  assert.ok(failing.requests.length > before);
  assert.ok(failing.requests.slice(before).some((r) => r.headers['webhook-id'] === id), 'the same webhook-id');

  // The link opens the job.
  await rows().first().getByRole('link').click();
  await page.waitForURL(`**/#/jobs/${jobs[1].id}`);
  await page.locator('article.delivery').first().waitFor();
});

test('a hook disabled by a 410 shows why and since when, and Enable turns it back on', async () => {
  hooks.gone = await apiCall('POST', '/v1/hooks', { target_url: `${gone.url}/gone`, event: 'job.completed' });
  await job('screenshot.png');
  await until('the hook disabled', async () => (await apiCall('GET', `/v1/hooks/${hooks.gone.id}`)).status === 'disabled');
  await page.getByRole('link', { name: 'Hooks' }).click();
  const row = hookRow('gone');
  await until('the disabled state shown', async () => /Disabled \(its target answered 410 Gone, .+\)/.test(await row.locator('.hook-state').innerText()));
  const at = (await apiCall('GET', `/v1/hooks/${hooks.gone.id}`)).disabled_at;
  assert.equal(await row.locator('.hook-state time').getAttribute('datetime'), at);
  assert.equal(await hookRow('signed').getByRole('button', { name: /^Enable/ }).count(), 0, 'an active hook has no Enable');

  // The failed delivery is on the Deliveries page under "failed".
  await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
  const failed = await showDeliveries({ status: 'failed', hook: 'gone' });
  assert.equal(failed.length, 1);
  assert.match(await rows().first().innerText(), /failed.*HTTP 410/s);

  await page.getByRole('link', { name: 'Hooks' }).click();
  await row.getByRole('button', { name: `Enable hook to ${gone.url}/gone` }).click();
  await page.getByRole('status').filter({ hasText: `Hook to ${gone.url}/gone enabled` }).waitFor();
  assert.match(await row.locator('.hook-state').innerText(), /^Active$/);
  assert.equal(await row.getByRole('button', { name: /^Enable/ }).count(), 0);
  assert.equal((await apiCall('GET', `/v1/hooks/${hooks.gone.id}`)).status, 'enabled');
  assert.equal(await page.evaluate(() => document.activeElement?.closest('tr')?.dataset.hook), hooks.gone.id, 'the focus stays in the row');
});

test('Recover queues every failed delivery since the time chosen (24 h ago by default), and they arrive', async () => {
  goneStatus = 200;
  const failed = await allDeliveries({ hook_id: hooks.gone.id, status: 'failed' });
  assert.ok(failed.length >= 1);
  const row = hookRow('gone');
  await row.getByRole('button', { name: `Recover failed deliveries to ${gone.url}/gone` }).click();
  const since = page.getByLabel('Recover failed deliveries since');
  assert.equal(await page.evaluate(() => document.activeElement?.type), 'datetime-local', 'the focus on the time');
  const offset = await since.evaluate((i) => Date.now() - new Date(i.value).getTime());
  assert.ok(Math.abs(offset - 24 * 3600 * 1000) < 2 * 60 * 1000, `24 h ago by default, got ${offset} ms ago`);
  const before = gone.requests.length;
  await page.getByRole('button', { name: 'Recover', exact: true }).click();
  await page.locator('.recover-result').filter({ hasText: new RegExp(`^${failed.length} queued`) }).waitFor();
  await until(`${failed.length} deliveries sent again`, () => gone.requests.length >= before + failed.length);
  const again = gone.requests.slice(before).map((r) => r.headers['webhook-id']).sort();
  assert.deepEqual(again, failed.map((d) => d.id).sort(), 'the failed ones, same webhook-id');

  // A time after every failure queues none.
  await since.fill(await page.evaluate(() => {
    const d = new Date(Date.now() + 60 * 1000 - 2 * 60 * 1000);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  }));
  await until('the recovered deliveries recorded', async () => (await allDeliveries({ hook_id: hooks.gone.id, status: 'failed' })).length === 0);
  await page.getByRole('button', { name: 'Recover', exact: true }).click();
  await page.locator('.recover-result').filter({ hasText: /^0 queued/ }).waitFor();
});

test('Rotate secret asks first, shows the new secret once, and the next delivery carries both signatures', async () => {
  const old = checkerSecrets[0];
  const row = hookRow('signed');
  const button = row.getByRole('button', { name: `Rotate secret of hook to ${checker.url}/signed` });
  page.once('dialog', (d) => d.dismiss());
  await button.click();
  await page.waitForTimeout(300);
  assert.equal((await apiCall('GET', `/v1/hooks/${hooks.signed.id}`)).secret, old, 'dismissed: not rotated');
  assert.equal(await page.locator('#hook-secret').isVisible(), false);

  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.accept(); });
  await button.click();
  const secret = await until('the new secret shown', async () => {
    const v = await page.getByLabel('Hook secret').inputValue();
    return v.startsWith('whsec_') && v !== old && v;
  });
  assert.match(asked, /Rotate the signing secret/);
  assert.match(await page.locator('#hook-secret-note').textContent(), /shown once.*both secrets are valid/);
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'hook-secret-value');
  const view = await apiCall('GET', `/v1/hooks/${hooks.signed.id}`);
  assert.equal(view.secret, secret);
  assert.ok(view.previous_secret_expires_at, 'an overlap');

  checkerSecrets = [secret]; // the receiver switched at once
  const before = checker.requests.length;
  const made = await job('screenshot.jpg');
  const r = await until('the next delivery', () => checker.requests.slice(before).find((x) => x.url === '/signed' && JSON.parse(x.body).data?.id === made.id));
  const sigs = signatures(r);
  assert.equal(sigs.length, 2, `two signatures: ${r.headers['webhook-signature']}`);
  assert.ok(sigs.some((s) => signedBy(r, s, secret)), 'one with the new secret');
  assert.ok(sigs.some((s) => signedBy(r, s, old)), 'one with the previous secret');
});

test('the callback secret is rotated on the Connect page, and the next callback carries both signatures', async () => {
  const old = (await apiCall('GET', '/v1/account')).webhook_secret;
  await page.getByRole('link', { name: 'Connect' }).click();
  await page.getByRole('tab', { name: 'Callbacks' }).click();
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Rotate the callback secret' }).click();
  const secret = await until('the new callback secret', async () => {
    const v = await page.getByLabel('New callback secret').inputValue();
    return v.startsWith('whsec_') && v !== old && v;
  });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'callback-secret-value');
  assert.match(await page.locator('#callback-secret-note').textContent(), /both secrets are valid/);
  assert.equal(await page.locator('#callback-secret-code').textContent(), secret, 'the snippet shows the new one');
  assert.equal((await apiCall('GET', '/v1/account')).webhook_secret, secret);

  checkerSecrets = [secret];
  const before = checker.requests.length;
  await createJob(imgflow, { json: { image_url: `${imgflow.url}/samples/photo.png`, callback_url: `${checker.url}/cb` } });
  const r = await until('the callback', () => checker.requests.slice(before).find((x) => x.url === '/cb'));
  const sigs = signatures(r);
  assert.equal(sigs.length, 2, `two signatures: ${r.headers['webhook-signature']}`);
  assert.ok(sigs.some((s) => signedBy(r, s, secret)) && sigs.some((s) => signedBy(r, s, old)), 'the new and the previous secret');
});

test('Load more pages through the deliveries with the cursor, never listing one twice', async () => {
  for (let i = 0; i < 26; i++) await apiCall('POST', `/v1/hooks/${hooks.signed.id}/test`);
  const want = (await allDeliveries({ hook_id: hooks.signed.id })).map((d) => d.id);
  assert.ok(want.length > 25 && want.length <= 50, `between one and two pages, got ${want.length}`);
  await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
  await showDeliveries({ hook: 'signed' });
  assert.equal(await rows().count(), 25);
  const more = page.getByRole('button', { name: 'Load more' });
  await more.click();
  await until('the second page', async () => (await rows().count()) === want.length);
  assert.deepEqual(await rowIDs(), want);
  await more.waitFor({ state: 'hidden' });
  assert.equal(await page.evaluate(() => document.activeElement?.closest('tr')?.dataset.delivery), want[25], 'the focus on the first new row');
});

test('every control has a label, no request carried the key in its URL, and the page logged no errors', async () => {
  await page.getByRole('link', { name: 'Hooks' }).click();
  await hookRow('gone').getByRole('button', { name: /^Recover/ }).click();
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
    .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
    .map((el) => el.outerHTML));
  assert.deepEqual(unlabelled, []);
  for (const r of requests) assert.ok(!r.url.includes(imgflow.key), `key in ${r.url}`);
  // The refused test (401) is the receiver's answer, not the API's.
  assert.deepEqual(problems, []);
});
