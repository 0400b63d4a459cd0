// Browser tests of the console's layout bugs: what the `hidden` attribute
// hides stays hidden, no page scrolls sideways on a phone (390×844), and
// "Load more" shows only when there is a next page and never repeats rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startImgflow, startReceiver, launchBrowser, until, signIn, createJob, pageOverflow } from './harness.js';

const images = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'fixtures', 'images');

let imgflow, receiver, browser, page;
let callbackJob;

before(async () => {
  imgflow = await startImgflow();
  receiver = await startReceiver();
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(30000);
});

after(async () => {
  await browser?.close();
  await receiver?.stop();
  await imgflow?.stop();
});

// shownHidden lists the elements that carry `hidden` yet take up room.
function shownHidden() {
  return page.evaluate(() => [...document.querySelectorAll('[hidden]')]
    .filter((e) => e.getClientRects().length > 0)
    .map((e) => e.outerHTML.slice(0, 80)));
}

// rowIDs are the job ids of the list's rows, in order.
function rowIDs() {
  return page.locator('#jobs-table tbody tr a[href^="#/jobs/"]').evaluateAll((as) =>
    as.map((a) => decodeURIComponent(a.getAttribute('href').slice('#/jobs/'.length))));
}

async function openJobs() {
  await page.goto(`${imgflow.url}/#/jobs`);
  await page.reload(); // a fresh list, whatever the page showed before
  await until('the list loaded', async () => (await page.locator('#jobs-table tbody tr').count()) > 0 ||
    page.locator('#jobs-empty').isVisible());
}

test('on the sign-in page nothing marked hidden shows, and there is no Sign out', async () => {
  await page.goto(imgflow.url + '/');
  await page.getByLabel('API key').waitFor();
  assert.deepEqual(await shownHidden(), []);
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).isVisible(), false);
  assert.equal(await page.getByRole('navigation').isVisible(), false);
});

test('with one job, Load more is not shown', async () => {
  await signIn(page, imgflow);
  await createJob(imgflow, { bytes: await readFile(join(images, 'photo.png')), name: 'photo.png' });
  await openJobs();
  assert.equal((await rowIDs()).length, 1);
  assert.equal(await page.getByRole('button', { name: 'Load more' }).isVisible(), false);
  for (const hash of ['#/try', '#/jobs', '#/deliveries', '#/hooks', '#/connect']) {
    await page.goto(imgflow.url + '/' + hash);
    await page.locator('main h2:visible').first().waitFor();
    assert.deepEqual(await shownHidden(), [], hash);
  }
});

test('Load more appears with a next page, adds the next jobs once, then goes', async () => {
  const webp = await readFile(join(images, 'photo.webp'));
  for (let i = 0; i < 21; i++) await createJob(imgflow, { bytes: webp, name: `batch-${i}.webp`, wait: 0 });
  await openJobs();
  const first = await rowIDs();
  assert.equal(first.length, 20, 'a first page of 20');
  const more = page.getByRole('button', { name: 'Load more' });
  assert.ok(await more.isVisible(), 'Load more shown with a next page');
  await more.click();
  await until('the second page', async () => (await rowIDs()).length > 20);
  const all = await rowIDs();
  assert.equal(all.length, 22);
  assert.equal(new Set(all).size, all.length, 'no row twice');
  assert.deepEqual(all.slice(0, 20), first);
  await until('Load more gone on the last page', async () => !(await more.isVisible()));
});

test('at 390×844 no page scrolls sideways', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  // Long names and a job with a callback delivery (its attempts table).
  callbackJob = await createJob(imgflow, {
    json: {
      image_url: `${imgflow.url}/console/../health?a-rather-long-query-string-that-goes-on=and-on-and-on-and-on`,
      callback_url: `${receiver.url}/a/very/long/path/of/a/flow/that/resumes/here/${'x'.repeat(40)}`,
      metadata: { record_id: 'rec_' + 'y'.repeat(60) },
    },
  });
  await createJob(imgflow, {
    bytes: await readFile(join(images, 'photo.png')),
    name: 'a-photo-with-a-very-long-file-name-taken-on-a-holiday-somewhere-nice.png',
  });
  await until('the callback attempted', () => receiver.requests.length > 0);

  await page.goto(`${imgflow.url}/#/signin`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.getByLabel('API key').waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'sign in');
  await signIn(page, imgflow);

  await page.goto(`${imgflow.url}/#/try`);
  await page.getByLabel(/Image file/).setInputFiles(join(images, 'photo.png'));
  const compress = page.getByRole('button', { name: 'Compress', exact: true });
  if (await compress.isVisible()) await compress.click(); // the first version needed the click
  await page.locator('#try-result').waitFor({ state: 'visible' });
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Try it with a result');

  await openJobs();
  await until('the long name listed', async () => (await page.locator('#jobs-table tbody tr').count()) >= 20);
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Jobs');
  // The saving keeps its "%" on the number's line.
  const brokenPercents = await page.locator('#jobs-table').evaluate((table) => {
    const broken = [];
    const walk = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!/\d\s%/.test(n.data)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(n.data);
    }
    return broken;
  });
  assert.deepEqual(brokenPercents, [], 'a saving split over two lines');

  await page.goto(`${imgflow.url}/#/jobs/${callbackJob.id}`);
  await page.locator('article.delivery tbody tr').first().waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, "a job's page");

  await page.goto(`${imgflow.url}/#/deliveries`);
  await page.locator('#dlv-table tbody tr').first().waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Deliveries');

  await page.goto(`${imgflow.url}/#/hooks`);
  await page.getByLabel('Target URL').fill(`${receiver.url}/hooks/${'z'.repeat(80)}`);
  await page.getByRole('button', { name: 'Create hook' }).click();
  await page.locator('#hooks-table tbody tr').first().waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Hooks');
  // With a test's answer and the recovery form open under the hook.
  await page.getByRole('button', { name: /^Send test to/ }).first().click();
  await page.locator('tr.hook-detail .test-code').waitFor();
  await page.getByRole('button', { name: /^Recover failed deliveries to/ }).first().click();
  await page.getByLabel('Recover failed deliveries since').waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Hooks with the recovery form');

  await page.goto(`${imgflow.url}/#/connect`);
  await page.locator('#view-connect pre').first().waitFor();
  assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, 'Connect');
  for (const tab of await page.getByRole('tab').all()) {
    await tab.click();
    assert.deepEqual(await pageOverflow(page), { over: 0, offenders: [] }, `Connect, ${await tab.textContent()}`);
  }
});
