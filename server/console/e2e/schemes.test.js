// Browser tests of the console's colour schemes: it follows the system's
// prefers-color-scheme, every text keeps WCAG AA contrast against what is
// behind it in both schemes (measured from computed styles), and the run
// writes the screenshots of docs/console.md: every page at 1280×800 and
// 390×844, light and dark.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startImgflow, startReceiver, launchBrowser, until, signIn, createJob } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const images = join(here, '..', '..', '..', 'fixtures', 'images');
const shots = join(here, '..', '..', '..', 'docs', 'console');

let imgflow, receiver, browser, page, anonymous, job;

before(async () => {
  imgflow = await startImgflow();
  receiver = await startReceiver();
  browser = await launchBrowser();
  page = await browser.context.newPage();
  anonymous = await browser.context.newPage(); // sessionStorage is per tab: signed out
  page.setDefaultTimeout(30000);
  await mkdir(shots, { recursive: true });
  await signIn(page, imgflow);
  for (const [file, name] of [['photo.jpg', 'team-photo.jpg'], ['screenshot.webp', 'dashboard.webp'], ['alpha.png', 'logo.png']]) {
    await createJob(imgflow, { bytes: await readFile(join(images, file)), name });
  }
  job = await createJob(imgflow, { json: { image_url: `${imgflow.url}/console/style.css`, callback_url: `${receiver.url}/resume` } });
  await until('the callback attempted', () => receiver.requests.length > 0);
  await page.getByLabel(/Image file/).setInputFiles(join(images, 'photo.png'));
  await page.locator('#try-result').waitFor({ state: 'visible' });
  await page.goto(`${imgflow.url}/#/hooks`);
  await page.getByLabel('Target URL').fill(`${receiver.url}/hook`);
  await page.getByRole('button', { name: 'Create hook' }).click();
  await page.locator('#hooks-table tbody tr').first().waitFor();
});

after(async () => {
  await browser?.close();
  await receiver?.stop();
  await imgflow?.stop();
});

// lowContrast lists the visible texts (and placeholders) whose contrast
// with their background is under WCAG AA: 4.5:1, or 3:1 for large text.
// Disabled controls are exempt, as in WCAG.
function lowContrast(p) {
  return p.evaluate(() => {
    const parse = (c) => {
      const m = c.match(/rgba?\(([^)]+)\)/);
      if (!m) return null;
      const v = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return { r: v[0], g: v[1], b: v[2], a: v.length > 3 ? v[3] : 1 };
    };
    const over = (top, under) => ({
      r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a),
      b: top.b * top.a + under.b * (1 - top.a), a: 1,
    });
    const lum = ({ r, g, b }) => {
      const f = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const background = (el) => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0) layers.push(c);
        if (c && c.a >= 1) break;
      }
      let bg = { r: 255, g: 255, b: 255, a: 1 };
      for (const c of layers.reverse()) bg = over(c, bg);
      return bg;
    };
    const faded = (el) => { for (let e = el; e; e = e.parentElement) if (Number(getComputedStyle(e).opacity) < 1) return true; return false; };
    const bad = [];
    const check = (el, color, text) => {
      const st = getComputedStyle(el);
      const size = parseFloat(st.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
      const bg = background(el);
      const r = ratio(over(parse(color), bg), bg);
      if (r < (large ? 3 : 4.5)) bad.push(`${text.slice(0, 40)} (${el.tagName.toLowerCase()}.${el.className}): ${r.toFixed(2)}:1, ${color} on rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)})`);
    };
    for (const el of document.querySelectorAll('body *')) {
      if (!el.checkVisibility() || el.closest(':disabled') || faded(el)) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width <= 1 || rect.height <= 1) continue; // visually hidden text
      const text = [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.data).join('').trim();
      if (text) check(el, getComputedStyle(el).color, text);
      if (el.placeholder && !el.value) check(el, getComputedStyle(el, '::placeholder').color, `placeholder ${el.placeholder}`);
    }
    return bad;
  });
}

const pages = [
  ['signin', () => anonymous, `/#/signin`, '#signin-title'],
  ['try', () => page, '/#/try', '#try-result h3'],
  ['jobs', () => page, '/#/jobs', '#jobs-table tbody tr'],
  ['job', () => page, () => `/#/jobs/${job.id}`, 'article.delivery tbody tr'],
  ['deliveries', () => page, '/#/deliveries', '#dlv-table tbody tr'],
  ['hooks', () => page, '/#/hooks', '#hooks-table tbody tr'],
  ['connect', () => page, '/#/connect', '[role="tabpanel"] pre'],
];

test('the page follows prefers-color-scheme: dark changes its background', async () => {
  await page.goto(`${imgflow.url}/#/try`);
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.emulateMedia({ colorScheme: 'light' });
  const light = await bg();
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await bg();
  assert.equal(light, 'rgb(255, 255, 255)');
  assert.notEqual(dark, light);
  const [r, g, b] = dark.match(/\d+/g).map(Number);
  assert.ok(r + g + b < 120, `a dark background, got ${dark}`);
});

for (const scheme of ['light', 'dark']) {
  test(`every page keeps AA contrast in the ${scheme} scheme (and is photographed)`, async () => {
    for (const p of [page, anonymous]) await p.emulateMedia({ colorScheme: scheme });
    for (const [w, h, size] of [[1280, 800, 'desktop'], [390, 844, 'phone']]) {
      for (const [name, which, path, ready] of pages) {
        const p = which();
        await p.setViewportSize({ width: w, height: h });
        await p.goto(imgflow.url + (typeof path === 'function' ? path() : path));
        await p.locator(ready).first().waitFor();
        if (name === 'try') await p.locator('#try-result').evaluate((r) => r.scrollIntoView({ block: 'start' }));
        if (name === 'jobs') {
          // The four finished uploads show their thumbnails.
          await until('the thumbnails', () => p.locator('#jobs-table .thumb img').evaluateAll((imgs) =>
            imgs.length >= 4 && imgs.every((i) => i.complete && i.naturalWidth > 0)));
        }
        await p.evaluate(() => document.activeElement?.blur());
        assert.deepEqual(await lowContrast(p), [], `${name}, ${size}, ${scheme}`);
        await p.screenshot({ path: join(shots, `${name}-${size}-${scheme}.png`) });
      }
    }
  });
}
