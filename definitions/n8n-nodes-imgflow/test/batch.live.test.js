// Compress Many against a live imgflow over real HTTP: the request the node
// builds (dist/, after build) from binary files, a URL and a broken image is
// POSTed as it is, and the answer must hold a job per image in input order,
// the completed ones' file_url downloading a smaller image of the same
// type, the broken one failed alone, and credits spent only on completed
// images. Then the packer's split: the same images as two batches.
//
// Uses IMGFLOW_URL and IMGFLOW_KEY when both are set; otherwise starts
// `go run . dev` from the repository on free loopback ports (its embedded
// Redis and reference upstream; REDIS_URL and IMGFLOW_* are not passed on)
// and stops it afterwards. Skipped, saying why, when neither is possible.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { BatchPacker, batchRecord, buildBatchRequest } = require('../dist/nodes/Imgflow/batch');
const { catalogOperation } = require('../dist/nodes/Imgflow/catalog');
const { sniffImageType } = require('../dist/nodes/Imgflow/request');

const repo = path.resolve(__dirname, '../../..');
const fixture = (name) => fs.readFileSync(path.join(__dirname, 'fixtures', name));
const op = catalogOperation('compress_many');

let dev = null;

function startDev() {
	return new Promise((resolve) => {
		const env = Object.fromEntries(
			Object.entries(process.env).filter(([k]) => k !== 'REDIS_URL' && k !== 'UPSTREAM_URL' && !k.startsWith('IMGFLOW_')),
		);
		dev = spawn('go', ['run', '.', 'dev', '--addr', '127.0.0.1:0', '--upstream-addr', '127.0.0.1:0'], { cwd: repo, detached: true, env });
		let seen = '';
		const timer = setTimeout(() => resolve({ why: `imgflow dev printed no address within 180 s: ${seen.slice(-300)}` }), 180_000);
		const onData = (chunk) => {
			seen += chunk.toString();
			const url = (seen.match(/imgflow API: (https?:\/\/\S+)/) || [])[1];
			const key = (seen.match(/demo key: (\S+)/) || [])[1];
			if (url && key) {
				clearTimeout(timer);
				resolve({ url: url.replace(/\/$/, ''), key });
			}
		};
		dev.stdout.on('data', onData);
		dev.stderr.on('data', onData);
		dev.on('error', (err) => resolve({ why: `go run . dev: ${err.message}` }));
		dev.on('exit', (code) => resolve({ why: `imgflow dev exited (${code}): ${seen.slice(-300)}` }));
	});
}

async function stopDev() {
	if (!dev || dev.exitCode !== null) return;
	const gone = new Promise((r) => dev.on('exit', r));
	try {
		process.kill(-dev.pid, 'SIGTERM');
	} catch {
		return;
	}
	const timer = setTimeout(() => {
		try {
			process.kill(-dev.pid, 'SIGKILL');
		} catch {}
	}, 30_000);
	await gone;
	clearTimeout(timer);
}

let server;
test.before(async () => {
	if (process.env.IMGFLOW_URL && process.env.IMGFLOW_KEY) {
		server = { url: process.env.IMGFLOW_URL.replace(/\/$/, ''), key: process.env.IMGFLOW_KEY };
	} else if (spawnSync('go', ['version']).status !== 0) {
		server = { why: 'no IMGFLOW_URL/IMGFLOW_KEY and no go to start imgflow dev' };
	} else {
		server = await startDev();
	}
});
test.after(stopDev);

// post sends a request as buildBatchRequest made it, with the key.
async function post(req, key, idempotencyKey) {
	const url = new URL(req.url);
	for (const [k, v] of Object.entries(req.qs)) url.searchParams.set(k, String(v));
	const res = await fetch(url, {
		method: req.method,
		headers: { ...req.headers, 'X-API-Key': key, 'Idempotency-Key': idempotencyKey },
		body: JSON.stringify(req.body),
	});
	return { status: res.status, body: await res.json() };
}

async function credits(key) {
	const res = await fetch(`${server.url}/v1/account`, { headers: { 'X-API-Key': key } });
	return (await res.json()).credits_remaining;
}

// The records the node makes of three input items: two binary files (as
// base64), a URL, and a file that is no image.
function inputRecords() {
	const png = fixture('screenshot.png');
	const jpg = fixture('screenshot.jpg');
	return {
		sizes: [png.length, undefined, jpg.length, undefined],
		types: ['image/png', 'image/png', 'image/jpeg', undefined],
		records: [
			batchRecord(op, { image_base64: png.toString('base64'), filename: 'one.png', metadata: '{"row":1}' }, 0),
			batchRecord(op, { image_url: `${server.url}/samples/photo.png`, filename: 'two.png' }, 1),
			batchRecord(op, { image_base64: jpg.toString('base64'), filename: 'three.jpg' }, 2),
			batchRecord(op, { image_base64: fixture('not-an-image.png').toString('base64'), filename: 'broken.png' }, 3),
		],
	};
}

// noServer skips a live test when imgflow dev could not start (no Go, say),
// and fails it instead under IMGFLOW_LIVE_REQUIRED=1 (ci.sh sets it): in CI
// a build that breaks imgflow must not pass as "skipped".
function noServer(t) {
	if (!server.why) return false;
	if (process.env.IMGFLOW_LIVE_REQUIRED === '1') assert.fail(`imgflow dev did not start: ${server.why}`);
	t.skip(server.why);
	return true;
}

async function checkJobs(jobs, from, types) {
	for (const [n, job] of jobs.entries()) {
		const i = from + n;
		assert.equal(job.index, n, `job ${n} of the batch has index ${job.index}`);
		if (types[i] === undefined) {
			assert.equal(job.status, 'failed', `item ${i} (no image) failed: ${JSON.stringify(job.error)}`);
			assert.ok(job.error && job.error.code, `item ${i} failed with a code`);
			continue;
		}
		assert.equal(job.status, 'completed', `item ${i}: ${JSON.stringify(job.error || job)}`);
		const res = await fetch(job.result.file_url); // signed: no key
		const data = Buffer.from(await res.arrayBuffer());
		assert.equal(res.status, 200);
		assert.equal(data.length, job.result.compressed_size, `item ${i}: file_url gives the compressed size`);
		assert.ok(job.result.compressed_size < job.result.original_size, `item ${i}: smaller`);
		assert.equal(sniffImageType(data), types[i], `item ${i}: the bytes are ${types[i]}`);
	}
}

test('the node\'s Compress Many request, POSTed to imgflow, answers every image\'s job in input order', async (t) => {
	if (noServer(t)) return;
	const { records, types, sizes } = inputRecords();
	const before = await credits(server.key);
	const req = buildBatchRequest(op, server.url, records, { metadata: '{"run":"live"}' }, 25);
	const { status, body } = await post(req, server.key, `live-${Date.now()}`);
	assert.equal(status, 200, `POST ${req.url}: ${JSON.stringify(body).slice(0, 400)}`);
	assert.equal(body.status, 'finished');
	assert.deepEqual(body.metadata, { run: 'live' });
	assert.deepEqual(body.counts && [body.counts.total, body.counts.completed, body.counts.failed], [4, 3, 1]);
	assert.equal(body.jobs.length, 4, 'a job per image');
	await checkJobs(body.jobs, 0, types);
	assert.deepEqual(body.jobs[0].metadata, { row: 1 }, 'each item keeps its own metadata');
	assert.equal(body.jobs[0].input.size, sizes[0], 'the binary arrived whole');
	// A server that compressed these images before reuses its results, free.
	const charged = body.jobs.filter((j) => j.status === 'completed' && !j.deduplicated_from).length;
	assert.equal(before - (await credits(server.key)), charged, 'one credit per image compressed, none for the broken one');
});

test('past the item limit the packer sends the images as several batches, each answering its own jobs', async (t) => {
	if (noServer(t)) return;
	const { records, types } = inputRecords();
	const packer = new BatchPacker(3, 32 << 20);
	const batches = [];
	for (const [i, r] of records.entries()) {
		const full = packer.add(r, i);
		if (full) batches.push(full);
	}
	batches.push(packer.take());
	assert.deepEqual(batches.map((b) => b.length), [3, 1]);
	let from = 0;
	const ids = new Set();
	for (const [n, batch] of batches.entries()) {
		const { status, body } = await post(buildBatchRequest(op, server.url, batch, {}, 25), server.key, `live-split-${Date.now()}-${n}`);
		assert.equal(status, 200, JSON.stringify(body).slice(0, 400));
		assert.equal(body.jobs.length, batch.length);
		await checkJobs(body.jobs, from, types);
		ids.add(body.id);
		from += batch.length;
	}
	assert.equal(ids.size, 2, 'two batches');
});

// The node's own execution (many.ts) with a stand-in for n8n's execution
// context whose requests go to the live imgflow over real HTTP: input
// items with binary files become one batch, each output item is an image's
// job paired with its input item, with the compressed file as binary.
function fakeContext({ items, params, continueOnFail }) {
	const { Readable } = require('node:stream');
	const toBuffer = async (stream) => {
		const chunks = [];
		for await (const c of stream) chunks.push(Buffer.from(c));
		return Buffer.concat(chunks);
	};
	const requests = [];
	const ctx = {
		getInputData: () => items,
		getNodeParameter: (name, i, fallback) => {
			const v = typeof params === 'function' ? params(i)[name] : params[name];
			if (v === undefined && fallback === undefined) throw new Error(`no parameter ${name}`);
			return v === undefined ? fallback : v;
		},
		getNode: () => ({ id: 'node-live', name: 'imgflow', type: 'n8n-nodes-imgflow.imgflow', typeVersion: 1, parameters: {} }),
		getExecutionId: () => `live-${process.pid}-${Date.now()}`,
		getCredentials: async () => ({ baseUrl: server.url, apiKey: server.key }),
		continueOnFail: () => continueOnFail,
		helpers: {
			assertBinaryData: (i, prop) => {
				const b = items[i].binary && items[i].binary[prop];
				if (!b) throw new Error(`item ${i} has no binary ${prop}`);
				return b;
			},
			getBinaryDataBuffer: async (i, prop) => Buffer.from(items[i].binary[prop].data, 'base64'),
			binaryToBuffer: toBuffer,
			prepareBinaryData: async (data, fileName, mimeType) => {
				const buf = Buffer.isBuffer(data) ? data : await toBuffer(data);
				return { data: buf.toString('base64'), fileName, mimeType, fileSize: String(buf.length) };
			},
			async httpRequestWithAuthentication(_cred, o) {
				const url = new URL(o.url);
				for (const [k, v] of Object.entries(o.qs || {})) url.searchParams.set(k, String(v));
				requests.push(`${o.method} ${url.pathname}${url.search}`);
				const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body);
				const res = await fetch(url, { method: o.method, headers: { ...o.headers, 'X-API-Key': server.key }, body });
				const headers = Object.fromEntries(res.headers.entries());
				if (o.encoding === 'stream') return { statusCode: res.status, headers, body: Readable.fromWeb(res.body) };
				const text = await res.text();
				return { statusCode: res.status, headers, body: text };
			},
		},
	};
	return { ctx, requests };
}

const binaryItem = (name, mimeType) => ({
	json: { name },
	binary: { data: { data: fixture(name).toString('base64'), fileName: name, mimeType } },
});

test('the node runs Compress Many as one batch: an output item per image, paired, with its compressed file', async (t) => {
	if (noServer(t)) return;
	const { compressMany } = require('../dist/nodes/Imgflow/many');
	const items = [binaryItem('screenshot.png', 'image/png'), binaryItem('screenshot.webp', 'image/webp'), binaryItem('not-an-image.png', 'image/png')];
	const params = (i) => ({
		inputType: 'binary',
		binaryPropertyName: 'data',
		additionalFields: { itemMetadata: `{"row":${i}}`, batchMetadata: '{"flow":"live"}' },
		options: { timeout: 120 },
	});
	const { ctx, requests } = fakeContext({ items, params, continueOnFail: true });
	const out = await compressMany(ctx);
	assert.equal(requests.filter((r) => r.startsWith('POST /v1/batches')).length, 1, `one batch request: ${requests.join(', ')}`);
	assert.equal(out.length, 3, 'an output item per input item');
	assert.deepEqual(out.map((o) => o.pairedItem.item), [0, 1, 2]);
	for (const [i, type] of [[0, 'image/png'], [1, 'image/webp']]) {
		const { json, binary } = out[i];
		assert.equal(json.status, 'completed', JSON.stringify(json.error || json));
		assert.deepEqual(json.metadata, { row: i }, 'each item\'s own metadata');
		const data = Buffer.from(binary.data.data, 'base64');
		assert.equal(sniffImageType(data), type);
		assert.equal(data.length, json.result.compressed_size);
		assert.ok(data.length < fixture(items[i].json.name).length, `item ${i} got smaller`);
		assert.equal(binary.data.fileName, items[i].json.name, 'the file keeps its name');
	}
	assert.ok(out[2].json.error && out[2].json.code && out[2].json.job_id, `the broken image is an error item: ${JSON.stringify(out[2].json)}`);
	const batch = await fetch(`${server.url}/v1/batches/${out[0].json.batch_id}`, { headers: { 'X-API-Key': server.key } }).then((r) => r.json());
	assert.deepEqual(batch.metadata, { flow: 'live' }, 'the batch metadata');

	// Without Continue On Fail the failed image stops the node with its code.
	const strict = fakeContext({ items, params, continueOnFail: false });
	await assert.rejects(compressMany(strict.ctx), (err) => err.context && err.context.code && err.context.code !== 'node_error');
});

// The built-in-node template (definitions/n8n/compress-many-wait.json): its
// two Code nodes run as n8n runs them (an async function of $input, with
// this.helpers), and the HTTP Request node's URL and JSON body go to the
// live imgflow as that node sends them.
test('the Compress Many template gathers the items, posts one batch and gives an item per image', async (t) => {
	if (noServer(t)) return;
	const tpl = JSON.parse(fs.readFileSync(path.join(repo, 'definitions/n8n/compress-many-wait.json'), 'utf8'));
	const node = (name) => tpl.nodes.find((n) => n.name === name);
	const runCode = (name, input) => {
		const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
		const fn = new AsyncFunction('$input', node(name).parameters.jsCode);
		const $input = { all: () => input, first: () => input[0] };
		const helpers = { getBinaryDataBuffer: async (i, prop) => Buffer.from(input[i].binary[prop].data, 'base64') };
		return fn.call({ helpers }, $input);
	};
	const input = [binaryItem('screenshot.png', 'image/png'), { json: { image_url: `${server.url}/samples/photo.jpg`, filename: 'from-url.jpg' } }];
	const batchItems = await runCode('Images to Batch', input);
	assert.equal(batchItems.length, 1, 'one item: the whole batch');

	const http = tpl.connections['Images to Batch'].main[0][0].node;
	const p = node(http).parameters;
	assert.equal(p.jsonBody, '={{ JSON.stringify($json) }}', 'the HTTP Request sends the gathered item as its JSON body');
	const url = p.url.replace('https://imgflow.example.com', server.url);
	const res = await fetch(url, {
		method: p.method,
		headers: { 'Content-Type': 'application/json', 'X-API-Key': server.key },
		body: JSON.stringify(batchItems[0].json),
	});
	const answer = await res.json();
	assert.equal(res.status, 200, JSON.stringify(answer).slice(0, 300));

	const perImage = await runCode('One Item per Image', [{ json: answer }]);
	assert.equal(perImage.length, 2, 'an item per image');
	assert.deepEqual(perImage.map((i) => [i.json.index, i.json.status]), [[0, 'completed'], [1, 'completed']]);
	assert.equal(perImage[1].json.input.filename, 'from-url.jpg');
	const file = await fetch(perImage[0].json.result.file_url); // what Download fetches
	assert.equal(sniffImageType(Buffer.from(await file.arrayBuffer())), 'image/png');
	await assert.rejects(runCode('Images to Batch', [{ json: {} }]), /item 0 has no image/);
});
