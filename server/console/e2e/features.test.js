// Browser tests of the console's second version: jobs told apart (file
// name, input type, thumbnail, the whole id), a list that updates itself
// without hammering the API and pauses in a hidden tab, search by id, Try
// it that starts on a drop and shows before/after in view, a drop zone
// that is one big button, and short accessible names.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startImgflow, launchBrowser, until, signIn, createJob, tabTo } from './harness.js';

const images = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'fixtures', 'images');

let imgflow, browser, page, imageServer, imageBase;
const listRequests = []; // [ms since start, url] of every GET /v1/jobs?… (the list)
const t0 = Date.now();

before(async () => {
  imgflow = await startImgflow();
  // An image host on loopback, for jobs made from a URL.
  const jpeg = await readFile(join(images, 'photo.jpg'));
  imageServer = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'image/jpeg', 'Content-Length': jpeg.length });
    res.end(jpeg);
  });
  await new Promise((r) => imageServer.listen(0, '127.0.0.1', r));
  imageBase = `http://127.0.0.1:${imageServer.address().port}`;
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(30000);
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (r.method() === 'GET' && u.pathname === '/v1/jobs') listRequests.push([Date.now() - t0, r.url()]);
  });
  await signIn(page, imgflow);
});

after(async () => {
  await browser?.close();
  await imgflow?.stop();
  await new Promise((r) => imageServer ? imageServer.close(r) : r());
});

function row(id) {
  return page.locator(`#jobs-table tbody tr[data-job="${id}"]`);
}

test('two jobs made within a minute read differently: file name, input type, thumbnail and id', async () => {
  const upload = await createJob(imgflow, { bytes: await readFile(join(images, 'screenshot.png')), name: 'invoice-scan.png' });
  const fromURL = await createJob(imgflow, { json: { image_url: `${imageBase}/shop/items/red-shoe.jpg?size=large` } });
  assert.equal(upload.status, 'completed');
  assert.equal(fromURL.status, 'completed');
  assert.equal(upload.id.slice(0, 8), fromURL.id.slice(0, 8), 'ids made a moment apart share their start');

  await page.goto(`${imgflow.url}/#/jobs`);
  await row(fromURL.id).waitFor();
  const texts = await page.locator('#jobs-table tbody tr').evaluateAll((trs) => trs.map((tr) => tr.innerText));
  assert.equal(texts.length, 2);
  assert.notEqual(texts[0], texts[1]);
  const idCell = (id) => row(id).locator('td.id-cell code').innerText();
  const [a, b] = [await idCell(upload.id), await idCell(fromURL.id)];
  assert.equal(a, upload.id, 'the whole id shown');
  assert.equal(b, fromURL.id);
  assert.notEqual(a, b);
  assert.match(await row(upload.id).innerText(), /invoice-scan\.png[\s\S]*Upload/);
  assert.match(await row(fromURL.id).innerText(), /red-shoe\.jpg[\s\S]*URL/);
  assert.match(await row(upload.id).locator('time').innerText(), /just now|\d+ s ago/);
  assert.ok(await row(upload.id).locator('time').getAttribute('title'), 'the exact time as its title');

  // The thumbnail is the compressed file, fetched with the key in a header.
  const thumb = row(upload.id).locator('.thumb img');
  await until('the thumbnail decoded', () => thumb.evaluate((img) => img.complete && img.naturalWidth > 0).catch(() => false));
  assert.match(await thumb.getAttribute('src'), /^blob:/);

  // Each row's copy button copies that row's whole id.
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: imgflow.url });
  await row(fromURL.id).getByRole('button', { name: `Copy the id of job …${fromURL.id.slice(-8)}` }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), fromURL.id);
});

test('the list shows a job made through the API within seconds, at most one request every 2 s', async () => {
  await page.goto(`${imgflow.url}/#/jobs`);
  await page.locator('#jobs-table tbody tr').first().waitFor();
  const made = await createJob(imgflow, { bytes: await readFile(join(images, 'photo.webp')), name: 'made-elsewhere.webp', wait: 0 });
  await until('the new job listed without a reload', () => row(made.id).count(), 10000);
  await until('its status finished', async () => /completed/.test(await row(made.id).innerText()), 15000);
  // Watch the list for a while: its requests are spaced by 2 s or more.
  const from = Date.now() - t0;
  await new Promise((r) => setTimeout(r, 7000));
  const times = listRequests.filter(([t]) => t >= from).map(([t]) => t);
  assert.ok(times.length >= 1, 'the list keeps refreshing');
  assert.ok(times.length <= 4, `at most one request every 2 s, got ${times.length} in 7 s`);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 1900, `requests ${times[i] - times[i - 1]} ms apart`);
  assert.equal(await page.locator('#jobs-table tbody tr').count(), 3, 'no row twice');
});

test('a hidden tab stops refreshing and catches up when shown again', async () => {
  await page.evaluate(() => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const from = Date.now() - t0;
  const made = await createJob(imgflow, { bytes: await readFile(join(images, 'photo.jpg')), name: 'while-hidden.jpg' });
  await new Promise((r) => setTimeout(r, 5000));
  assert.deepEqual(listRequests.filter(([t]) => t >= from), [], 'no list request while hidden');
  assert.equal(await row(made.id).count(), 0);
  await page.evaluate(() => {
    delete document.hidden;
    delete document.visibilityState;
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await until('the job made while hidden listed', () => row(made.id).count(), 10000);
});

test('search by id: part of an id filters the list, a whole id not loaded is looked up', async () => {
  await page.goto(`${imgflow.url}/#/jobs`);
  await page.locator('#jobs-table tbody tr').first().waitFor();
  const ids = await page.locator('#jobs-table tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.job));
  const target = ids[1];
  await page.getByLabel('Search by job id').fill(target.slice(-6));
  await until('one row left', async () => (await page.locator('#jobs-table tbody tr:visible').count()) === 1);
  assert.equal(await page.locator('#jobs-table tbody tr:visible').getAttribute('data-job'), target);
  await page.getByLabel('Search by job id').fill('zzzz');
  await page.getByRole('status').filter({ hasText: 'No listed job matches' }).waitFor();

  // A job beyond the first page: 20 more jobs push it out of the list.
  const webp = await readFile(join(images, 'photo.webp'));
  for (let i = 0; i < 20; i++) await createJob(imgflow, { bytes: webp, name: `later-${i}.webp`, wait: 0 });
  await page.getByLabel('Search by job id').fill('');
  await page.reload();
  await page.locator('#jobs-table tbody tr').first().waitFor();
  assert.equal(await row(target).count(), 0, 'not on the first page');
  await page.getByLabel('Search by job id').fill(target);
  await page.getByRole('button', { name: 'Find' }).click();
  await row(target).waitFor();
  assert.equal(await page.locator('#jobs-table tbody tr:visible').count(), 1);
  await page.getByLabel('Search by job id').fill('01a00000-0000-7000-8000-000000000000');
  await page.getByRole('button', { name: 'Find' }).click();
  await page.getByRole('status').filter({ hasText: 'No job of yours has id' }).waitFor();
  await page.getByLabel('Search by job id').fill('');
});

test('a dropped file compresses without another click and shows before and after in view', async () => {
  await page.goto(`${imgflow.url}/#/try`);
  await page.locator('#drop-zone').waitFor();
  const bytes = [...await readFile(join(images, 'photo.png'))];
  const dt = await page.evaluateHandle((b) => {
    const data = new DataTransfer();
    data.items.add(new File([new Uint8Array(b)], 'dropped.png', { type: 'image/png' }));
    return data;
  }, bytes);
  await page.dispatchEvent('#drop-zone', 'dragenter', { dataTransfer: dt });
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer: dt });
  await page.locator('#try-result').waitFor({ state: 'visible' });
  for (const id of ['#before-img', '#after-img']) {
    assert.ok(await page.locator(id).evaluate((img) => img.complete && img.naturalWidth > 0), `${id} shown`);
  }
  assert.match(await page.locator('#try-result').innerText(), /dropped\.png/);
  assert.match(await page.locator('#before-dims').innerText(), /^320 × 240 px$/);
  assert.match(await page.locator('#after-dims').innerText(), /^320 × 240 px$/);
  assert.match(await page.locator('#before-size').innerText(), /KiB/);
  const inView = await page.locator('#try-result h3').evaluate((h) => {
    const r = h.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= innerHeight;
  });
  assert.ok(inView, 'the result scrolled into view');
  // The slider moves the divider between before (left) and after.
  await page.getByLabel('Before/after divider').fill('20');
  assert.equal(await page.locator('#compare').evaluate((c) => c.style.getPropertyValue('--pos')), '20%');
});

test('the whole drop zone opens the file picker, by mouse and by keyboard', async () => {
  // A listener held for the whole test: Playwright turns file-chooser
  // interception on asynchronously, and a waitForEvent made just before a
  // raw click sometimes was not yet on when the click landed.
  const opened = [];
  const onChooser = (c) => opened.push(c);
  page.on('filechooser', onChooser);
  try {
    await page.goto(`${imgflow.url}/#/try`);
    // The account line appears when the key check answers and moves the
    // page down: measure the zone only once the header is settled.
    await page.locator('#account').waitFor();
    const zone = page.locator('#drop-zone');
    await zone.scrollIntoViewIfNeeded();
    const box = await zone.boundingBox();
    // Near a corner of the zone (inside its rounding), away from its text and button.
    await page.mouse.click(box.x + 16, box.y + box.height - 8);
    await until('a file chooser from the click', () => opened.length === 1, 10000);
    // Every transform option sits before the drop zone in the tab order.
    await page.locator('#try-title').focus();
    assert.equal(await tabTo(page, 'try-file', 16), 'try-file', 'Tab reaches the drop zone');
    assert.ok(await zone.evaluate((z) => z.matches(':focus-within')), 'the zone shows its focus');
    for (const [i, key] of ['Enter', 'Space'].entries()) {
      await page.keyboard.press(key);
      await until(`a file chooser from ${key}`, () => opened.length === 2 + i, 10000);
    }
  } finally {
    page.off('filechooser', onChooser);
  }
});

test('accessible names are short: no control reads out a whole id', async () => {
  await page.goto(`${imgflow.url}/#/jobs`);
  await page.locator('#jobs-table tbody tr').first().waitFor();
  const long = await page.evaluate(() => [...document.querySelectorAll('button')]
    .map((b) => b.getAttribute('aria-label') || b.textContent.trim())
    .filter((n) => /[0-9a-f]{8}-[0-9a-f]{4}-/.test(n) || n.length > 60));
  assert.deepEqual(long, []);
});
