// What the console's browser tests run against, all on loopback: a live
// `imgflow dev` (embedded Redis, reference upstream, API, worker) started
// from the binary named by IMGFLOW_BIN, a webhook receiver that records
// what it gets, and Debian's chromium driven by playwright-core with a
// fresh profile.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// The flags the console's CI runs Chromium with: no GPU, no sandbox (CI runs
// as root in a container), and none of Chromium's own calls home.
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// freePort asks the kernel for a free loopback port.
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, proc, deadlineMs) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`imgflow dev exited with ${proc.exitCode}`);
    try {
      const res = await fetch(url + '/health');
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`imgflow dev did not answer ${url}/health in time`);
}

// startImgflow runs `imgflow dev` on free loopback ports with its embedded
// Redis and a demo key of its own.
export async function startImgflow() {
  const bin = process.env.IMGFLOW_BIN;
  if (!bin) throw new Error('IMGFLOW_BIN must name a built imgflow binary (see run.sh)');
  const [api, up] = [await freePort(), await freePort()];
  const key = 'e2e-' + randomBytes(12).toString('hex');
  // No REDIS_URL: embedded Redis. The Deliveries pages need more test
  // deliveries in a row than a key may send by default (10 a minute); the
  // limits themselves are tested in server/ratelimit_test.go.
  const env = {
    PATH: process.env.PATH, HOME: process.env.HOME || tmpdir(),
    IMGFLOW_HOOK_TESTS_PER_MINUTE: '100', IMGFLOW_HOOK_RECOVERS_PER_HOUR: '100',
  };
  const proc = spawn(bin, ['dev', '--addr', `127.0.0.1:${api}`, '--upstream-addr', `127.0.0.1:${up}`, '--demo-key', key],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${api}`;
  try {
    await waitHealthy(url, proc, 30000);
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${err.message}\n${log}`);
  }
  return {
    url, key,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// startReceiver is a webhook receiver on loopback that records every
// request and answers 200 with a short body, or what answer(request)
// returns ({status, body}) when given.
export async function startReceiver(answer) {
  const got = [];
  const srv = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() };
      got.push(r);
      const { status = 200, body = 'received by the e2e receiver' } = answer ? answer(r) : {};
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(body);
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    requests: got,
    stop: () => new Promise((r) => srv.close(r)),
  };
}

// launchBrowser starts chromium with a fresh profile directory.
export async function launchBrowser() {
  const profile = await mkdtemp(join(tmpdir(), 'imgflow-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    acceptDownloads: true,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// until polls cond (async) until it returns a truthy value.
export async function until(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`expected ${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// signIn signs the page in through the form, as a user would.
export async function signIn(page, imgflow) {
  await page.goto(imgflow.url + '/');
  await page.getByLabel('API key').fill(imgflow.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText(/^Plan: \w+/).waitFor();
}

// createJob posts one job through the API (not the page): file is a path
// read as an upload named name, or an object sent as JSON.
export async function createJob(imgflow, { bytes, name, json, wait = 20 }) {
  let body;
  const headers = { 'X-API-Key': imgflow.key };
  if (json) {
    body = JSON.stringify(json);
    headers['Content-Type'] = 'application/json';
  } else {
    body = new FormData();
    body.append('file', new Blob([bytes]), name);
  }
  const q = wait ? `?wait=${wait}` : '';
  const res = await fetch(`${imgflow.url}/v1/jobs${q}`, { method: 'POST', headers, body });
  const job = await res.json();
  if (res.status >= 300) throw new Error(`POST /v1/jobs: ${res.status} ${JSON.stringify(job)}`);
  return job;
}

// pageOverflow is how far the page is wider than the viewport (0 when it
// fits), with the elements that stick out on the right, for the message.
export function pageOverflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const over = document.documentElement.scrollWidth - width;
    const offenders = over <= 0 ? [] : [...document.querySelectorAll('body *')]
      .filter((e) => e.checkVisibility() && e.getBoundingClientRect().right > width + 1)
      .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}.${e.className}: right ${Math.round(e.getBoundingClientRect().right)}`);
    return { over, offenders };
  });
}

// tabTo presses Tab (at most presses times) until the element with id has
// the focus, and returns the id of the element focused last.
export async function tabTo(page, id, presses) {
  let focused = '';
  for (let i = 0; i < presses && focused !== id; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.id);
  }
  return focused;
}
