// Compress Many's request building (dist/, after build): what goes on the
// wire for a list of input items, read from the generated catalog.
const test = require('node:test');
const assert = require('node:assert/strict');
const { BatchPacker, batchRecord, buildBatchRequest, batchIdempotencyKey, recordSize } = require('../dist/nodes/Imgflow/batch');
const { catalog, catalogOperation } = require('../dist/nodes/Imgflow/catalog');

const op = catalogOperation('compress_many');
const base = 'https://imgflow.example.com/';

test('a record keeps the list\'s fields only, drops empty ones and parses metadata', () => {
	const r = batchRecord(op, { image_url: 'https://images.example.com/a.jpg', image_base64: '', filename: 'a.jpg', metadata: '{"sku":"A1"}', dedupe: true }, 0);
	assert.deepEqual(r, { image_url: 'https://images.example.com/a.jpg', filename: 'a.jpg', metadata: { sku: 'A1' } });
	assert.deepEqual(batchRecord(op, { image_base64: 'iVBORw0KGgo=' }, 1), { image_base64: 'iVBORw0KGgo=' });
});

test('a record without an image, or with metadata that is no object, is refused naming its item', () => {
	assert.throws(() => batchRecord(op, { filename: 'a.jpg' }, 7), /item 7 has no image/);
	assert.throws(() => batchRecord(op, { image_url: 'https://x/a.png', metadata: '[1]' }, 3), /Metadata \(item 3\) must be a JSON object/);
});

test('the batch request posts the records as the list field, with the batch metadata, wait and include=jobs', () => {
	const records = [{ image_url: 'https://images.example.com/a.jpg' }, { image_base64: 'iVBORw0KGgo=', filename: 'b.png' }];
	const req = buildBatchRequest(op, base, records, { metadata: '{"run":"r1"}', items: 'ignored' }, 25);
	assert.equal(req.method, 'POST');
	assert.equal(req.url, 'https://imgflow.example.com/v1/batches');
	assert.deepEqual(req.qs, { wait: 25, include: 'jobs' });
	assert.equal(req.headers['Content-Type'], 'application/json');
	assert.deepEqual(req.body, { items: records, metadata: { run: 'r1' } });
	const bare = buildBatchRequest(op, base, records, {}, 3);
	assert.deepEqual(Object.keys(bare.body), ['items'], 'no batch metadata: none sent');
	assert.equal(bare.qs.wait, 3);
});

test('the packer splits at the item limit and at the body limit, and keeps every record in order', () => {
	const rec = (i) => ({ image_url: `https://images.example.com/${i}.png` });
	const byCount = new BatchPacker(3, 1 << 20);
	const sent = [];
	for (let i = 0; i < 7; i++) {
		const full = byCount.add(rec(i), i);
		if (full) sent.push(full);
	}
	sent.push(byCount.take());
	assert.deepEqual(sent.map((c) => c.length), [3, 3, 1]);
	assert.deepEqual(sent.flat(), Array.from({ length: 7 }, (_, i) => rec(i)));

	const big = { image_base64: 'A'.repeat(1000) };
	const bySize = new BatchPacker(1000, recordSize(big) * 2 + 10);
	const chunks = [];
	for (let i = 0; i < 5; i++) {
		const full = bySize.add(big, i);
		if (full) chunks.push(full);
	}
	chunks.push(bySize.take());
	assert.deepEqual(chunks.map((c) => c.length), [2, 2, 1]);
	assert.throws(() => new BatchPacker(10, 100).add(big, 4), /item 4 is \d+ bytes as JSON, over the 100/);
	assert.deepEqual(new BatchPacker(10, 100).take(), []);
});

test('the limits come from the catalog, and batch Idempotency-Keys differ per batch of a run', () => {
	assert.equal(catalog.limits.maxBatchItems, 1000);
	assert.equal(catalog.limits.maxBatchBody, 32 * 1024 * 1024);
	const keys = new Set([batchIdempotencyKey('41', 'n', 0), batchIdempotencyKey('41', 'n', 1), batchIdempotencyKey('42', 'n', 0)]);
	assert.equal(keys.size, 3);
	assert.equal(batchIdempotencyKey('41', 'n', 0), batchIdempotencyKey('41', 'n', 0));
});
