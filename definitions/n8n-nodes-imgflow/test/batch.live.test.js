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
	if (server.why) return t.skip(server.why);
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
	if (server.why) return t.skip(server.why);
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
