// Make Image Sizes (dist/, after build): the set's request as it goes on the
// wire, and the output item of one size.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const { buildRequest } = require('../dist/nodes/Imgflow/request');
const { catalogOperation } = require('../dist/nodes/Imgflow/catalog');
const { sizeJson } = require('../dist/nodes/Imgflow/sizes');

const base = 'https://imgflow.example.com';
const sizes = [{ id: 'sm', resize: '320x', convert: 'webp' }, { id: 'lg', resize: '1600x', target: '200KB' }];

test('Make Image Sizes posts the sizes as variants to /v1/jobs/variants, asking for the jobs', () => {
	const op = catalogOperation('compress_variants');
	const req = buildRequest(op, base, { image_url: 'https://images.example.com/a.jpg', variants: sizes, filename: '' });
	assert.equal(req.method, 'POST');
	assert.equal(req.url, `${base}/v1/jobs/variants`);
	assert.equal(req.qs.include, 'jobs');
	assert.deepEqual(req.body, { image_url: 'https://images.example.com/a.jpg', variants: sizes });
});

test('Make Image Sizes with a stored binary streams it as the body, the sizes as JSON in the query', () => {
	const op = catalogOperation('compress_variants');
	const stream = Readable.from([Buffer.from('x')]);
	const req = buildRequest(op, base, { variants: sizes }, { stream, size: 1, fileName: 'a.jpg', mimeType: 'image/jpeg' });
	assert.equal(req.body, stream);
	assert.deepEqual(JSON.parse(req.qs.variants), sizes);
	assert.equal(req.qs.filename, 'a.jpg');
});

test('an output item of a size carries the size, its job and the set\'s srcset and picture', () => {
	const set = { id: 'set1', srcset: 'u1 320w, u2 1600w', picture: '<picture></picture>' };
	const job = {
		id: 'job1',
		variant: 'sm',
		status: 'completed',
		result: { width: 320, height: 480, compressed_size: 14210, mime_type: 'image/webp', filename: 'a-sm.webp', file_url: 'u1' },
	};
	assert.deepEqual(sizeJson(set, job), {
		id: 'sm',
		width: 320,
		height: 480,
		bytes: 14210,
		format: 'webp',
		mime_type: 'image/webp',
		filename: 'a-sm.webp',
		url: 'u1',
		job_id: 'job1',
		set_id: 'set1',
		srcset: 'u1 320w, u2 1600w',
		picture: '<picture></picture>',
		job,
	});
});
