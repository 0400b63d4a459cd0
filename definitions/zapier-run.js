'use strict';
// Runs the generated Zapier app for real, in zapier-platform-core, against a
// live imgflow: the auth test, Compress Image (request template, through
// createAppTester), Get Job, the polling trigger, and the {source}
// operations through core's lambda handler: Compress Image with Callback
// (Zapier's callback URL is a local receiver here, and performResume gets
// what imgflow POSTed to it) and the REST hook trigger (subscribe, a real
// delivery, perform, performList, unsubscribe), then Batch Finished and
// Credits Low the same way (a batch of one image that takes the balance to
// the threshold). It asserts what a user would notice: the image got
// smaller and each job cost exactly one credit.
// Then the CLI project (zapier/index.js): Compress Image's `file` output is
// a dehydrated pointer, and its hydrator, run as Zapier runs it against a
// local stand-in for Zapier's file store (the RPC that hands out an upload
// form, and the upload itself), stashes a smaller image of the right name
// and type, with the key in no URL.
//
//   node zapier-run.js REPO_ROOT
//
// Uses IMGFLOW_URL and IMGFLOW_KEY when both are set; otherwise starts
// `go run . dev` in REPO_ROOT on free loopback ports with its embedded Redis
// (REDIS_URL and IMGFLOW_* are not passed on, so the run leaves nothing in
// any shared Redis), reads "imgflow API: URL" and "demo key: KEY" from its
// output, and stops it (the whole process group) before exiting. Exit status: 0 passed, 1 failed, 3 skipped (no server
// within 120 s).
process.env.NODE_ENV = 'test';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const zapier = require('zapier-platform-core');

const root = path.resolve(process.argv[2] || path.join(__dirname, '..'));
const PLACEHOLDER = 'https://imgflow.example.com';
const START_TIMEOUT_MS = 120 * 1000;
let devProcess = null;

const log = (m) => console.log(`  ${m}`);
const fail = (m) => {
  throw new Error(m);
};
const assert = (ok, m) => {
  if (!ok) fail(m);
  log(`ok: ${m}`);
};

function startDev() {
  return new Promise((resolve) => {
    log(`starting: go run . dev (in ${root})`);
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => k !== 'REDIS_URL' && k !== 'UPSTREAM_URL' && !k.startsWith('IMGFLOW_')),
    );
    const args = ['run', '.', 'dev', '--addr', '127.0.0.1:0', '--upstream-addr', '127.0.0.1:0'];
    devProcess = spawn('go', args, { cwd: root, detached: true, env });
    let seen = '';
    let url = null;
    let key = null;
    const timer = setTimeout(() => resolve(null), START_TIMEOUT_MS);
    const onData = (chunk) => {
      seen += chunk.toString();
      url = url || (seen.match(/imgflow API: (https?:\/\/\S+)/) || [])[1];
      key = key || (seen.match(/demo key: (\S+)/) || [])[1];
      if (url && key) {
        clearTimeout(timer);
        resolve({ url, key });
      }
    };
    devProcess.stdout.on('data', onData);
    devProcess.stderr.on('data', onData);
    devProcess.on('exit', (code) => {
      clearTimeout(timer);
      log(`imgflow dev exited (${code}); last output: ${seen.trim().split('\n').slice(-3).join(' | ')}`);
      resolve(null);
    });
  });
}

// stopDev stops the go run process group we started (go run and dev) and
// waits until it is gone: dev drains on SIGTERM; SIGKILL after 30 s.
async function stopDev() {
  if (!devProcess) return;
  const group = -devProcess.pid;
  const alive = () => {
    try {
      process.kill(group, 0);
      return true;
    } catch (_) {
      return false;
    }
  };
  try {
    process.kill(group, 'SIGTERM');
  } catch (_) {
    return;
  }
  for (let i = 0; i < 300 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive()) {
    log('imgflow dev did not stop within 30 s of SIGTERM; killing it');
    try {
      process.kill(group, 'SIGKILL');
    } catch (_) {}
  }
}

// A local receiver: serves the sample image and records POSTs (callbacks and
// hook deliveries) by path.
function startReceiver() {
  const received = {};
  const waiters = {};
  const images = {};
  for (const name of ['photo.png', 'screenshot.png']) images[`/${name}`] = fs.readFileSync(path.join(root, 'fixtures/images', name));
  const server = http.createServer((req, res) => {
    const image = images[req.url];
    if (req.method === 'GET' && image) {
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': image.length });
      return res.end(image);
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      res.writeHead(200);
      res.end();
      const entry = { headers: req.headers, body: JSON.parse(body || 'null') };
      (received[req.url.split('?')[0]] = received[req.url.split('?')[0]] || []).push(entry);
      (waiters[req.url.split('?')[0]] || []).forEach((w) => w());
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const base = `http://127.0.0.1:${server.address().port}`;
      const next = (p, timeoutMs = 60000) =>
        new Promise((res, rej) => {
          const check = () => received[p] && received[p].length && res(received[p].shift());
          if (check()) return;
          (waiters[p] = waiters[p] || []).push(check);
          setTimeout(() => rej(new Error(`nothing POSTed to ${p} within ${timeoutMs / 1000} s`)), timeoutMs);
        });
      resolve({ server, base, next });
    });
  });
}

async function run(url, key) {
  const text = fs.readFileSync(path.join(__dirname, 'zapier/imgflow-zapier-app.json'), 'utf8');
  const app = JSON.parse(text.split(PLACEHOLDER).join(url.replace(/\/$/, '')));
  const appTester = zapier.createAppTester(app);
  const handler = zapier.createAppHandler(JSON.parse(JSON.stringify(app)));
  const execute = async (method, bundle, callbackUrl) => {
    const out = await handler({ command: 'execute', method, bundle, callback_url: callbackUrl }, {});
    return out.results;
  };
  const authData = { api_key: key };
  const receiver = await startReceiver();
  try {
    // 1. The connection test.
    const account = await appTester(app.authentication.test, { authData });
    assert(account.valid === true, `auth test: key accepted (${account.user_id}, ${account.subscription_type})`);
    assert(Number.isInteger(account.credits_remaining), `auth test: ${account.credits_remaining} credits`);
    const credits0 = account.credits_remaining;

    let bad = null;
    try {
      await appTester(app.authentication.test, { authData: { api_key: 'sk_wrong' } });
    } catch (err) {
      bad = err;
    }
    assert(bad !== null, `auth test: a wrong key is refused (${bad && String(bad.message).split('\n')[0].slice(0, 80)})`);

    // 2. Compress Image (request template, waits up to 25 s).
    const imageUrl = `${receiver.base}/photo.png`;
    const job = await appTester(app.creates.compress_image.operation.perform, {
      authData,
      inputData: { image_url: imageUrl, filename: 'zapier-run.png', metadata: { run: 'zapier-run' } },
    });
    assert(job.status === 'completed', `compress_image: job ${job.id} completed (status ${job.status}${job.error ? ', ' + job.error.message : ''})`);
    assert(job.result.compressed_size < job.result.original_size,
      `compress_image: ${job.result.original_size} -> ${job.result.compressed_size} bytes`);
    assert(job.metadata && job.metadata.run === 'zapier-run', 'compress_image: metadata echoed back');
    assert(typeof job.result.file_url === 'string' && job.result.file_url.length > 0, 'compress_image: file_url given');

    // 3. Get Job.
    const got = await appTester(app.creates.get_job.operation.perform, { authData, inputData: { id: job.id } });
    assert(got.id === job.id && got.status === 'completed', 'get_job: same job, completed');

    const after1 = await appTester(app.authentication.test, { authData });
    assert(after1.credits_remaining === credits0 - 1, `credits: ${credits0} -> ${after1.credits_remaining}, exactly one for one job`);

    // 4. Polling trigger.
    const polled = await execute('triggers.job_finished_polling.operation.perform', { authData, inputData: {} });
    assert(Array.isArray(polled) && polled.some((j) => j.id === job.id), `job_finished_polling: ${polled.length} finished job(s), including ${job.id}`);
    assert(polled.every((j) => j.status === 'completed' || j.status === 'failed'), 'job_finished_polling: only finished jobs');

    // 5. REST hook: subscribe a local target.
    const hookOp = app.triggers.job_finished.operation;
    const sub = await appTester(hookOp.performSubscribe, {
      authData, inputData: { event: 'job.finished' }, targetUrl: `${receiver.base}/hook`,
    });
    assert(typeof sub.id === 'string' && /^whsec_/.test(sub.secret || ''), `job_finished: subscribed hook ${sub.id}`);

    // 6. Compress with callback: perform (lambda handler, {source}), the
    // callback arrives, performResume returns the finished job.
    const queued = await execute('creates.compress_image_callback.operation.perform',
      // dedupe off: the same image again would reuse the first result, free.
      { authData, inputData: { image_url: imageUrl, filename: 'callback.png', dedupe: false } }, `${receiver.base}/callback?sig=abc`);
    assert(typeof queued.id === 'string', `compress_image_callback: job ${queued.id} created (${queued.status})`);
    const cb = await receiver.next('/callback');
    assert(cb.headers['webhook-signature'] && cb.headers['webhook-id'], 'callback: signed with Standard Webhooks headers');
    const resumed = await execute('creates.compress_image_callback.operation.performResume',
      { authData, inputData: {}, outputData: queued, cleanedRequest: cb.body });
    assert(resumed.id === queued.id && resumed.status === 'completed', 'compress_image_callback: performResume gives the completed job');
    assert(resumed.result.compressed_size < resumed.result.original_size, 'compress_image_callback: image got smaller');

    // 7. The hook delivery of that job, through perform.
    const delivery = await receiver.next('/hook');
    const hooked = await execute('triggers.job_finished.operation.perform', { authData, inputData: {}, cleanedRequest: delivery.body });
    assert(Array.isArray(hooked) && hooked[0].id === queued.id, 'job_finished: delivery turns into the finished job');
    const listed = await execute('triggers.job_finished.operation.performList', { authData, inputData: { event: 'job.completed' } });
    assert(listed.some((j) => j.id === job.id), 'job_finished: performList shows recent completed jobs');
    await execute('triggers.job_finished.operation.performUnsubscribe', { authData, subscribeData: sub });
    log(`ok: job_finished: unsubscribed ${sub.id}`);

    const after2 = await appTester(app.authentication.test, { authData });
    assert(after2.credits_remaining === credits0 - 2, `credits: ${credits0} -> ${after2.credits_remaining}, exactly two for two jobs`);

    // 8. Compress Many ({source}): line items as Zapier hands them over
    // (children keyed items_<field>, blank values, a blank trailing line),
    // one batch, a job per image in order.
    const many = await execute('creates.compress_many.operation.perform', {
      authData,
      inputData: {
        items: [
          { items_image_url: imageUrl, items_image_base64: '', items_filename: 'many-1.png', items_metadata: '{"row":1}' },
          { items_image_url: `${url.replace(/\/$/, '')}/samples/photo.jpg`, items_filename: '', items_metadata: '' },
          { items_image_url: '', items_filename: '' },
        ],
        metadata: { zap: 'zapier-run' },
      },
    });
    assert(many.status === 'finished' && Array.isArray(many.jobs) && many.jobs.length === 2,
      `compress_many: batch ${many.id} ${many.status} with ${many.jobs && many.jobs.length} jobs (the blank line dropped)`);
    assert(many.jobs.every((j, i) => j.index === i && j.status === 'completed' && j.result.file_url),
      `compress_many: both images completed in order, each with file_url (${many.jobs.map((j) => j.status).join(', ')})`);
    assert(many.jobs[0].metadata && many.jobs[0].metadata.row === 1 && many.jobs[0].input.filename === 'many-1.png',
      'compress_many: the line item\'s metadata (JSON text) and file name arrived');
    assert(many.metadata && many.metadata.zap === 'zapier-run', 'compress_many: the batch metadata echoed back');
    const charged = many.jobs.filter((j) => !j.deduplicated_from).length;
    const after3 = await appTester(app.authentication.test, { authData });
    assert(after3.credits_remaining === after2.credits_remaining - charged,
      `credits: ${after2.credits_remaining} -> ${after3.credits_remaining}, one per image compressed (${charged}; a repeat of an earlier image is free)`);
  } finally {
    receiver.server.close();
  }
}

// runHookTriggers: Batch Finished and Credits Low, subscribed as Zapier
// subscribes them (performSubscribe's request template); a batch of one
// image finishes (batch.finished), and its one credit takes the balance to
// the threshold (account.credits_low); perform turns each delivery into the
// event's data, performList shows real items, performUnsubscribe deletes.
async function runHookTriggers(url, key) {
  const text = fs.readFileSync(path.join(__dirname, 'zapier/imgflow-zapier-app.json'), 'utf8');
  const app = JSON.parse(text.split(PLACEHOLDER).join(url.replace(/\/$/, '')));
  const appTester = zapier.createAppTester(app);
  const handler = zapier.createAppHandler(JSON.parse(JSON.stringify(app)));
  const execute = async (method, bundle) => (await handler({ command: 'execute', method, bundle }, {})).results;
  const authData = { api_key: key };
  const receiver = await startReceiver();
  try {
    const before = await appTester(app.authentication.test, { authData });
    const batchSub = await appTester(app.triggers.batch_finished.operation.performSubscribe, {
      authData, inputData: {}, targetUrl: `${receiver.base}/batch`,
    });
    assert(typeof batchSub.id === 'string' && batchSub.event === 'batch.finished', `batch_finished: subscribed hook ${batchSub.id} to ${batchSub.event}`);
    const threshold = before.credits_remaining - 1;
    const lowSub = await appTester(app.triggers.credits_low.operation.performSubscribe, {
      authData, inputData: { threshold }, targetUrl: `${receiver.base}/low`,
    });
    assert(lowSub.event === 'account.credits_low' && lowSub.threshold === threshold,
      `credits_low: subscribed hook ${lowSub.id} to ${lowSub.event} at ${lowSub.threshold}`);
    // screenshot.png: an image this key has not compressed yet (a repeat
    // would be free, and cross nothing).
    const made = await fetch(`${url.replace(/\/$/, '')}/v1/batches`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ items: [{ image_url: `${receiver.base}/screenshot.png`, filename: 'zapier-batch.png' }] }),
    });
    const batch = await made.json();
    assert(made.status === 202 && typeof batch.id === 'string', `batch ${batch.id} created (${made.status})`);
    const batchDelivery = await receiver.next('/batch');
    const batched = await execute('triggers.batch_finished.operation.perform', { authData, inputData: {}, cleanedRequest: batchDelivery.body });
    assert(Array.isArray(batched) && batched[0].id === batch.id && batched[0].status === 'finished' && batched[0].counts.completed === 1,
      `batch_finished: delivery turns into the finished batch (${batched[0] && JSON.stringify(batched[0].counts)})`);
    assert(typeof batched[0].links.archive === 'string', 'batch_finished: the batch carries its archive link');
    const batches = await execute('triggers.batch_finished.operation.performList', { authData, inputData: {} });
    assert(batches.some((b) => b.id === batch.id) && batches.every((b) => b.status === 'finished'), 'batch_finished: performList shows recent finished batches');
    const lowDelivery = await receiver.next('/low');
    const low = await execute('triggers.credits_low.operation.perform', { authData, inputData: { threshold }, cleanedRequest: lowDelivery.body });
    assert(low[0].credits_remaining === threshold && low[0].threshold === threshold && typeof low[0].job_id === 'string',
      `credits_low: delivery turns into the event's data (${low[0].credits_remaining} credits left, threshold ${low[0].threshold})`);
    const balance = await execute('triggers.credits_low.operation.performList', { authData, inputData: { threshold } });
    assert(balance.length === 1 && balance[0].credits_remaining === threshold && balance[0].threshold === threshold,
      'credits_low: performList shows the balance against the threshold');
    await execute('triggers.batch_finished.operation.performUnsubscribe', { authData, subscribeData: batchSub });
    await execute('triggers.credits_low.operation.performUnsubscribe', { authData, subscribeData: lowSub });
    log(`ok: batch_finished, credits_low: unsubscribed ${batchSub.id}, ${lowSub.id}`);
    const after = await appTester(app.authentication.test, { authData });
    assert(after.credits_remaining === before.credits_remaining - 1,
      `credits: ${before.credits_remaining} -> ${after.credits_remaining}, exactly one for the batch's one image`);
  } finally {
    receiver.server.close();
  }
}

// A stand-in for Zapier's file store: the RPC call z.stashFile makes
// (get_presigned_upload_post_data) and the multipart upload it then sends.
function startStash() {
  const stored = [];
  const urls = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    urls.push(req.url);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const base = `http://127.0.0.1:${server.address().port}`;
      if (req.url === '/rpc') {
        const call = JSON.parse(body.toString('utf8'));
        const result = call.method === 'get_presigned_upload_post_data'
          ? { url: `${base}/upload/`, fields: { key: `stash/${++n}` } }
          : null;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return res.end(JSON.stringify({ id: call.id, result, error: result ? undefined : `unexpected rpc ${call.method}` }));
      }
      if (req.url === '/upload/') {
        stored.push(parseUpload(req.headers['content-type'], body));
        res.writeHead(204);
        return res.end();
      }
      res.writeHead(404);
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () =>
    resolve({ server, base: `http://127.0.0.1:${server.address().port}`, stored, urls })));
}

// parseUpload reads the upload form: its text fields and its file part.
function parseUpload(contentType, body) {
  const boundary = Buffer.from('--' + /boundary=(.+)$/.exec(contentType)[1]);
  const out = { fields: {} };
  let at = body.indexOf(boundary);
  while (at >= 0) {
    const next = body.indexOf(boundary, at + boundary.length);
    if (next < 0) break;
    const part = body.subarray(at + boundary.length + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    const head = part.subarray(0, split).toString('utf8');
    const data = part.subarray(split + 4);
    const name = (/name="([^"]*)"/.exec(head) || [])[1];
    const filename = (/filename="([^"]*)"/.exec(head) || [])[1];
    if (filename !== undefined) {
      out.file = { name: filename, type: (/Content-Type: (.+)/i.exec(head) || [])[1], data };
    } else {
      out.fields[name] = data.toString('utf8');
    }
    at = next;
  }
  return out;
}

// Every URL node's http and https modules are asked for while fn runs.
async function recordingURLs(fn) {
  const https = require('https');
  const seen = [];
  const wrap = (mod) => {
    const orig = mod.request;
    mod.request = function (...args) {
      const a = args[0];
      seen.push(typeof a === 'string' || a instanceof URL ? String(a) : `${a.protocol || ''}//${a.hostname || a.host}${a.port ? ':' + a.port : ''}${a.path || ''}`);
      return orig.apply(this, args);
    };
    return () => (mod.request = orig);
  };
  const undo = [wrap(http), wrap(https)];
  try {
    return { result: await fn(), seen };
  } finally {
    undo.forEach((u) => u());
  }
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

async function runCLI(url, key) {
  const text = fs.readFileSync(path.join(__dirname, 'zapier/index.js'), 'utf8');
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'imgflow-zapier-cli-')), 'index.js');
  fs.writeFileSync(file, text.split(PLACEHOLDER).join(url.replace(/\/$/, '')));
  const app = require(file);
  const handler = zapier.createAppHandler(app);
  const execute = async (method, bundle, extra = {}) => {
    const out = await handler({ command: 'execute', method, bundle, ...extra }, {});
    return out.results;
  };
  const authData = { api_key: key };
  const receiver = await startReceiver();
  const stash = await startStash();
  try {
    const image = fs.readFileSync(path.join(root, 'fixtures/images/photo.png'));
    const job = await execute('creates.compress_image.operation.perform', {
      authData, inputData: { image_url: `${receiver.base}/photo.png`, filename: 'zapier-file.png' },
    });
    assert(job.status === 'completed', `CLI compress_image: job ${job.id} completed`);
    assert(typeof job.file === 'string' && job.file.startsWith('hydrate|||') && job.file.endsWith('|||hydrate'),
      'CLI compress_image: file is a dehydrated pointer');
    assert(typeof job.result.file_url === 'string', 'CLI compress_image: file_url still given beside it');
    const payload = JSON.parse(job.file.slice('hydrate|||'.length, -'|||hydrate'.length));
    assert(payload.method === 'hydrators.compressedFile' && payload.bundle.id === job.id,
      `CLI compress_image: the pointer names hydrators.compressedFile for job ${payload.bundle.id}`);
    assert(!job.file.includes(key), 'CLI compress_image: the pointer does not carry the key');

    // Zapier runs the hydrator when a later step uses the file.
    // The RPC authenticates with a deploy key rather than an invocation
    // token: with a token, core also ships its logs to Zapier's log service.
    process.env.ZAPIER_DEPLOY_KEY = 'zapier-run';
    process.env.LOGGING_ENDPOINT = `${stash.base}/log`; // loopback, should anything log
    const { result: stashedURL, seen } = await recordingURLs(() => execute(payload.method,
      { authData, inputData: payload.bundle }, { rpc_base: `${stash.base}/rpc` }));
    assert(seen.every((u) => /^http:\/\/127\.0\.0\.1:\d+\//.test(u)), `hydrator: every request stayed on loopback (${seen.join(', ')})`);
    assert(typeof stashedURL === 'string' && stashedURL.startsWith(`${stash.base}/upload/stash/`), `hydrator: stashed at ${stashedURL}`);
    const up = stash.stored[stash.stored.length - 1];
    assert(up && up.file, 'hydrator: the file store received one file');
    assert(up.file.name === 'zapier-file.png', `hydrator: file name ${up.file.name}`);
    assert(up.file.type === job.result.mime_type && up.file.type === 'image/png', `hydrator: content type ${up.file.type}`);
    assert(up.file.data.subarray(0, 8).equals(PNG_MAGIC), 'hydrator: the stashed bytes are a PNG');
    assert(up.file.data.length === job.result.compressed_size && up.file.data.length < image.length,
      `hydrator: ${image.length} -> ${up.file.data.length} bytes, the compressed image`);
    const all = seen.concat(stash.urls);
    assert(all.some((u) => u.includes(`/v1/jobs/${job.id}/file`)), 'hydrator: fetched GET /v1/jobs/{id}/file');
    assert(all.every((u) => !u.includes(key) && !u.includes(encodeURIComponent(key)) && !/[?&]token=/.test(u)),
      `hydrator: no URL carries the key or a file token (${all.length} requests)`);

    // The triggers hand the same pointer on with each completed job.
    const polled = await execute('triggers.job_finished_polling.operation.perform', { authData, inputData: { status: 'completed' } });
    const mine = polled.find((j) => j.id === job.id);
    assert(mine && typeof mine.file === 'string' && mine.file.startsWith('hydrate|||'), 'CLI job_finished_polling: completed jobs carry file');
    const delivered = Object.assign({}, mine);
    delete delivered.file;
    const hooked = await execute('triggers.job_finished.operation.perform',
      { authData, inputData: {}, cleanedRequest: { type: 'job.completed', timestamp: '', data: delivered } });
    assert(hooked[0].file && hooked[0].file.startsWith('hydrate|||'), 'CLI job_finished: the delivered job carries file');
  } finally {
    receiver.server.close();
    stash.server.close();
  }
}

(async () => {
  let target = null;
  if (process.env.IMGFLOW_URL && process.env.IMGFLOW_KEY) {
    target = { url: process.env.IMGFLOW_URL, key: process.env.IMGFLOW_KEY };
    log(`using IMGFLOW_URL=${target.url}`);
  } else {
    target = await startDev();
    if (!target) {
      console.log(`  SKIP: could not start 'go run . dev' within ${START_TIMEOUT_MS / 1000} s (or it exited); set IMGFLOW_URL and IMGFLOW_KEY to use a running server`);
      await stopDev();
      process.exit(3);
    }
    log(`imgflow dev at ${target.url}`);
  }
  try {
    await run(target.url, target.key);
    await runCLI(target.url, target.key);
    await runHookTriggers(target.url, target.key);
    await stopDev();
    process.exit(0);
  } catch (err) {
    console.log(`  FAIL: ${err.message}`);
    await stopDev();
    process.exit(1);
  }
})();
