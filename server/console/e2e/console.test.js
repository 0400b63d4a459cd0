// Browser tests of the web console at /: a real Chromium signs in, compresses
// an image, downloads it, finds the job, reads and replays its delivery and
// manages hooks, against a live `imgflow dev`. The tests run in order and
// share one page, as a user's session would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startImgflow, startReceiver, launchBrowser, until, tabTo } from './harness.js';

const images = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'fixtures', 'images');

let imgflow, receiver, browser, page;
const requests = []; // every request the browser made
const problems = []; // console errors and failed page loads
let jobID = '';

// apiGet reads the API directly (from node, not the page) to check what the
// console showed.
async function apiGet(path) {
  const res = await fetch(imgflow.url + path, { headers: { 'X-API-Key': imgflow.key } });
  assert.equal(res.status, 200, `GET ${path}`);
  return res.json();
}

// reloadUntilAttempt reloads the job page until the delivery shows an
// attempt: a receiver sees the request before the worker records it.
async function reloadUntilAttempt(delivery) {
  await until('the attempt listed', async () => {
    await page.reload();
    await page.locator('#deliveries').locator('article, p').first().waitFor();
    return (await delivery.locator('tbody tr').count()) > 0;
  });
}

before(async () => {
  imgflow = await startImgflow();
  receiver = await startReceiver();
  browser = await launchBrowser();
  browser.context.on('request', (r) => requests.push({ url: r.url(), headers: r.headers() }));
  page = await browser.context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`${m.text()} (${m.location().url})`); });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.setDefaultTimeout(30000);
});

after(async () => {
  await browser?.close();
  await receiver?.stop();
  await imgflow?.stop();
});

test('the page is served with a strict Content-Security-Policy', async () => {
  const res = await page.goto(imgflow.url + '/');
  assert.equal(res.status(), 200);
  const csp = res.headers()['content-security-policy'];
  for (const part of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:"]) {
    assert.ok(csp.includes(part), `expected ${part} in ${csp}`);
  }
  assert.ok(!csp.includes('unsafe-inline'), csp);
});

test('a wrong key is refused with its code and message', async () => {
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'invalid_key' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
});

test('signing in with the keyboard alone shows the plan and the credits', async () => {
  await page.goto(imgflow.url + '/');
  await page.getByLabel('API key').waitFor();
  assert.equal(await tabTo(page, 'api-key', 10), 'api-key', 'expected Tab to reach the API key field');
  await page.keyboard.type(imgflow.key);
  await page.keyboard.press('Enter');
  await page.getByText(/^Plan: \w+/).waitFor();
  const account = await apiGet('/v1/account');
  assert.equal(await page.locator('#account-credits').textContent(), `Credits: ${account.credits_remaining}`);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('imgflow.apiKey')), imgflow.key);
  assert.ok(page.url().endsWith('#/try'), page.url());
});

test('every form control has a label', async () => {
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
    .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
    .map((el) => el.outerHTML));
  assert.deepEqual(unlabelled, []);
});

test('an upload is compressed: previews, sizes, saving and a download', async () => {
  await page.getByText('More options').click();
  await page.getByLabel(/Callback URL/).fill(receiver.url + '/resume?signature=e2e');
  // Choosing the file starts the compression: no other click.
  await page.getByLabel(/Image file/).setInputFiles(join(images, 'photo.png'));
  await page.locator('#try-result').waitFor({ state: 'visible' });

  const saving = await page.locator('#try-saving').textContent();
  const m = saving.match(/^(\d+\.\d)\u00a0%$/);
  assert.ok(m && Number(m[1]) > 0, `expected a positive saving, got ${saving}`);
  jobID = (await page.locator('#try-job-link').getAttribute('href')).replace('#/jobs/', '');
  const job = await apiGet(`/v1/jobs/${jobID}`);
  const want = (100 * (1 - job.result.compressed_size / job.result.original_size)).toFixed(1);
  assert.equal(m[1], want, 'saving shown vs the job');

  for (const id of ['#before-img', '#after-img']) {
    const ok = await until(`${id} decoded`, () => page.locator(id).evaluate((img) => img.complete && img.naturalWidth > 0));
    assert.ok(ok);
    assert.match(await page.locator(id).getAttribute('src'), /^blob:/);
  }
  const original = await readFile(join(images, 'photo.png'));
  assert.equal(job.result.original_size, original.length);

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download compressed image' }).click(),
  ]);
  const got = await readFile(await download.path());
  assert.equal(got.length, job.result.compressed_size, 'downloaded size');
  assert.deepEqual([...got.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  assert.equal(download.suggestedFilename(), job.result.filename);
  assert.equal(await page.locator('#account-credits').textContent(), `Credits: ${job.result.credits_remaining}`);
});

test('a file that is not an image shows the error code and message', async () => {
  await page.getByLabel(/Callback URL/).fill('');
  await page.getByLabel(/Image file/).setInputFiles(join(images, 'not-an-image.png'));
  await page.locator('#try-error').filter({ hasText: /^unsupported_format: / }).waitFor();
});

test('the job is listed, newest first, and its details open', async () => {
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  const link = page.getByRole('link', { name: `Job ${jobID}` });
  await link.waitFor();
  const firstRow = page.locator('#jobs-table tbody tr').first();
  assert.equal(await firstRow.locator('code').textContent(), jobID);
  assert.match(await firstRow.textContent(), /photo\.png.*Upload.*completed/);
  await link.click();
  await page.getByRole('heading', { name: `Job …${jobID.slice(-8)}: photo.png` }).waitFor();
  // The heading comes at once, the details with the API's answer.
  await page.locator('#job-detail dd').filter({ hasText: 'photo.png' }).first().waitFor();
  assert.equal(await page.locator('#job-id-full').textContent(), jobID);
  await page.getByRole('button', { name: 'Copy the job id' }).waitFor();
  const detail = await page.locator('#job-detail').textContent();
  assert.ok(detail.includes('Upload') && detail.includes('Saving'), detail);
});

test('the callback delivery is listed with its attempt and can be redelivered', async () => {
  await until('the callback received', () => receiver.requests.length >= 1);
  const cb = page.locator('article.delivery').filter({ hasText: 'Callback' });
  await reloadUntilAttempt(cb);
  const text = await cb.textContent();
  assert.ok(text.includes(`${receiver.url}/resume`) && !text.includes('signature=e2e'), `target without query: ${text}`);
  assert.match(await cb.locator('tbody tr').first().textContent(), /200.*delivered.*received by the e2e receiver/);

  await cb.getByRole('button', { name: 'Redeliver the callback' }).click();
  await page.getByRole('status').filter({ hasText: 'Redelivered: delivered (HTTP 200)' }).waitFor();
  assert.equal(await cb.locator('tbody tr').count(), 2);
  assert.equal(receiver.requests.length, 2);
  const [first, second] = receiver.requests;
  assert.equal(second.headers['webhook-id'], first.headers['webhook-id'], 'same webhook-id');
  assert.equal(second.body, first.body, 'same message');
  assert.equal(second.url, '/resume?signature=e2e');
});

test('a hook is created with its secret shown once, then deleted', async () => {
  await page.getByRole('link', { name: 'Hooks' }).click();
  await page.getByLabel('Target URL').fill(receiver.url + '/hook');
  await page.getByLabel('Event').selectOption('job.completed');
  await page.getByRole('button', { name: 'Create hook' }).click();
  const secret = await until('the secret shown', async () => {
    const v = await page.getByLabel('Hook secret').inputValue();
    return v.startsWith('whsec_') && v;
  });
  assert.ok(secret);
  const row = page.locator('#hooks-table tbody tr').filter({ hasText: receiver.url + '/hook' });
  await row.waitFor();
  assert.match(await row.textContent(), /job\.completed.*Active/);
  const hooks = (await apiGet('/v1/hooks')).hooks;
  assert.equal(hooks.length, 1);

  // A job finished now reaches the hook, and its page shows that delivery.
  const form = new FormData();
  form.append('file', new Blob([await readFile(join(images, 'photo.webp'))]), 'photo.webp');
  const res = await fetch(imgflow.url + '/v1/jobs?wait=20', { method: 'POST', headers: { 'X-API-Key': imgflow.key }, body: form });
  const job = await res.json();
  assert.equal(job.status, 'completed');
  await until('the hook delivery', () => receiver.requests.some((r) => r.url === '/hook'));
  await page.goto(`${imgflow.url}/#/jobs/${job.id}`);
  const delivery = page.locator('article.delivery').filter({ hasText: `Hook …${hooks[0].id.slice(-8)}` });
  await reloadUntilAttempt(delivery);
  assert.match(await delivery.locator('tbody tr').first().textContent(), /200.*delivered/);
  await page.getByRole('link', { name: 'Hooks' }).click();
  // Its success rate and last error come from the key's delivery log, where
  // the server keeps one (GET /v1/deliveries); elsewhere they read "–".
  const log = await fetch(`${imgflow.url}/v1/deliveries?hook_id=${hooks[0].id}`, { headers: { 'X-API-Key': imgflow.key } });
  const [want, wantError] = log.status === 200 ? [/^100\s% of 1$/, 'none'] : [/^–$/, '–'];
  await until('the hook\'s success rate', async () => want.test(await row.locator('.hook-rate').innerText()));
  assert.equal(await row.locator('.hook-last-error').innerText(), wantError);

  await row.getByRole('button', { name: `Delete hook to ${receiver.url}/hook` }).click();
  await row.waitFor({ state: 'detached' });
  await page.getByText('No hooks yet.').waitFor();
  assert.equal((await apiGet('/v1/hooks')).hooks.length, 0);
});

test('Connect shows snippets with the public URL and the definition files', async () => {
  await page.getByRole('link', { name: 'Connect' }).click();
  await page.getByRole('tab', { name: 'curl' }).waitFor();
  assert.equal(await page.locator('#public-url').textContent(), imgflow.url);
  const curl = await page.getByRole('tabpanel').locator('pre').first().textContent();
  assert.ok(curl.includes(`${imgflow.url}/v1/jobs?wait=20`) && curl.includes('$IMGFLOW_KEY') && !curl.includes(imgflow.key), curl);
  for (const name of ['n8n', 'Zapier', 'Make', 'Power Automate']) {
    await page.getByRole('tab', { name }).click();
    assert.equal(await page.getByRole('tab', { name }).getAttribute('aria-selected'), 'true');
    await page.getByRole('heading', { name }).waitFor();
    await page.getByRole('button', { name: `Copy the ${name} snippet` }).waitFor();
    assert.equal(await page.getByRole('tabpanel').count(), 1, 'one panel shown');
  }
  // The arrow keys move between tabs.
  await page.getByRole('tab', { name: 'Power Automate' }).focus();
  await page.keyboard.press('ArrowLeft');
  assert.equal(await page.getByRole('tab', { name: 'Make' }).getAttribute('aria-selected'), 'true');
  await page.getByRole('tab', { name: 'n8n' }).click();
  assert.ok((await page.getByRole('tabpanel').textContent()).includes('n8n-nodes-imgflow'));
  await page.getByRole('tab', { name: 'Power Automate' }).click();
  const files = page.getByRole('tabpanel').getByRole('link');
  assert.ok(await files.count() >= 2);
  const href = await page.getByRole('link', { name: 'powerautomate/apiDefinition.swagger.json' }).getAttribute('href');
  const res = await fetch(href);
  assert.equal(res.status, 200, href);
});

test('no request carried the key in its URL, and none left this server', async () => {
  assert.ok(requests.length > 10, `expected the session's requests recorded, got ${requests.length}`);
  const origin = new URL(imgflow.url).origin;
  for (const r of requests) {
    assert.ok(!r.url.includes(imgflow.key) && !r.url.includes(encodeURIComponent(imgflow.key)), `key in ${r.url}`);
    assert.ok(r.url.startsWith(origin + '/') || r.url.startsWith('blob:') || r.url.startsWith('data:'), `third-party request ${r.url}`);
  }
  const withKey = requests.filter((r) => r.headers['x-api-key'] === imgflow.key);
  assert.ok(withKey.length > 0, 'expected the key sent as X-API-Key');
  assert.ok(withKey.every((r) => new URL(r.url).pathname.startsWith('/v1/')), 'the key goes only to the API');
});

test('the page logged no errors (no CSP violation, no script error)', () => {
  // The refused key and the refused file answer 401 and 400 on purpose; a
  // server without a delivery log across jobs answers its route with 404.
  const unexpected = problems.filter((p) => !/status of (401|400)/.test(p) && !/status of 404 .*\/v1\/deliveries\?/.test(p));
  assert.deepEqual(unexpected, []);
});
