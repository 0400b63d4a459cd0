// Request building of the imgflow node (dist/, after build): what goes on the
// wire for each operation, read from the generated catalog.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { buildRequest, multipart, idempotencyKey, inlineWait, sniffImageType, parseObject } = require('../dist/nodes/Imgflow/request');
const { catalogOperation } = require('../dist/nodes/Imgflow/catalog');

// Copies of a few of the repository's fixtures/images, so that the package
// folder tests on its own.
const images = path.join(__dirname, 'fixtures');
const base = 'https://imgflow.example.com/';

test('Compress with a URL posts JSON to /v1/jobs with the API field names', () => {
	const op = catalogOperation('compress_image');
	const req = buildRequest(op, base, {
		image_url: 'https://images.example.com/a.jpg',
		filename: 'a.jpg',
		metadata: '{"record_id":"rec_1"}',
		image_base64: '',
	});
	assert.equal(req.method, 'POST');
	assert.equal(req.url, 'https://imgflow.example.com/v1/jobs');
	assert.equal(req.headers['Content-Type'], 'application/json');
	assert.deepEqual(req.body, {
		image_url: 'https://images.example.com/a.jpg',
		filename: 'a.jpg',
		metadata: { record_id: 'rec_1' },
	});
});

test('Compress with a binary file sends multipart: text fields, then the file with its name and type', () => {
	const op = catalogOperation('compress_image');
	const data = fs.readFileSync(path.join(images, 'screenshot.png'));
	const req = buildRequest(op, base, { metadata: { k: 'v' } }, { data, fileName: 'photo "1".png', mimeType: 'image/png' }, 'BOUNDARY');
	assert.equal(req.headers['Content-Type'], 'multipart/form-data; boundary=BOUNDARY');
	const body = req.body;
	assert.ok(Buffer.isBuffer(body));
	const head = body.subarray(0, body.indexOf(data)).toString('latin1');
	assert.match(head, /name="metadata"\r\n\r\n\{"k":"v"\}\r\n/);
	assert.match(head, /name="file"; filename="photo %221%22.png"\r\nContent-Type: image\/png\r\n\r\n$/);
	const tail = '\r\n--BOUNDARY--\r\n';
	assert.equal(body.subarray(body.length - tail.length).toString(), tail);
	assert.equal(body.indexOf(data) + data.length, body.length - tail.length, 'the file bytes go in unchanged');
});

test('Compress with a stored binary streams it as the body: no copy, fields in the query', () => {
	const op = catalogOperation('compress_image');
	const stream = fs.createReadStream(path.join(images, 'screenshot.png'));
	const size = fs.statSync(path.join(images, 'screenshot.png')).size;
	const req = buildRequest(op, base, { metadata: { k: 'v' } }, { stream, size, fileName: 'photo.png', mimeType: 'image/jpeg' });
	stream.destroy();
	assert.equal(req.body, stream, 'the stream itself is the body');
	assert.equal(req.headers['Content-Type'], 'application/octet-stream', 'the API reads the type from the bytes, not the label');
	assert.equal(req.headers['Content-Length'], String(size));
	assert.deepEqual(req.qs, { wait: '25', metadata: '{"k":"v"}', filename: 'photo.png' });
	const named = buildRequest(op, base, { filename: 'out.png' }, { stream, fileName: 'photo.png', mimeType: '' });
	assert.equal(named.qs.filename, 'out.png', 'a File Name given wins over the binary\'s name');
	assert.equal(named.headers['Content-Length'], undefined);
});

test('Metadata that is not a JSON object is refused before sending', () => {
	assert.throws(() => parseObject('Metadata', '[1,2]'), /must be a JSON object/);
	assert.throws(() => parseObject('Metadata', 'not json'), /must be a JSON object/);
	assert.deepEqual(parseObject('Metadata', { a: 1 }), { a: 1 });
});

test('Get Job puts the id in the path (escaped) and include in the query', () => {
	const req = buildRequest(catalogOperation('get_job'), base, { id: 'a/b', include: 'data' });
	assert.equal(req.method, 'GET');
	assert.equal(req.url, 'https://imgflow.example.com/v1/jobs/a%2Fb');
	assert.deepEqual(req.qs, { include: 'data' });
	assert.equal(req.body, undefined);
	assert.throws(() => buildRequest(catalogOperation('get_job'), base, {}), /Job ID is required/);
});

test('Get Many Jobs sends the status filter and the catalog query', () => {
	const req = buildRequest(catalogOperation('job_finished_polling'), base, { status: 'failed' });
	assert.equal(req.url, 'https://imgflow.example.com/v1/jobs');
	assert.equal(req.qs.status, 'failed');
	assert.equal(req.qs.limit, '100');
});

test('the Idempotency-Key is stable per execution, node and item, and differs between them', () => {
	assert.equal(idempotencyKey('41', 'node-a', 0), idempotencyKey('41', 'node-a', 0));
	const keys = new Set([
		idempotencyKey('41', 'node-a', 0),
		idempotencyKey('41', 'node-a', 1),
		idempotencyKey('42', 'node-a', 0),
		idempotencyKey('41', 'node-b', 0),
	]);
	assert.equal(keys.size, 4);
	assert.ok(idempotencyKey('41', 'node-a', 0).length <= 255);
});

test('the inline wait never passes the timeout or the API maximum', () => {
	assert.equal(inlineWait(300, 25), 25);
	assert.equal(inlineWait(10, 25), 10);
	assert.equal(inlineWait(0.5, 25), 0);
});

test('image types are told by their bytes, as the API does', () => {
	for (const [file, type] of [
		['screenshot.png', 'image/png'],
		['screenshot.jpg', 'image/jpeg'],
		['screenshot.webp', 'image/webp'],
		['screenshot.avif', 'image/avif'],
		['not-an-image.png', undefined],
		['animated.gif', undefined],
	]) {
		assert.equal(sniffImageType(fs.readFileSync(path.join(images, file))), type, file);
	}
	// A phone's HEIC photo (imgflow converts it before compressing): its ftyp box.
	const heic = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypheic\0\0\0\0mif1heic', 'latin1')]);
	assert.equal(sniffImageType(heic), 'image/heic');
});

test('a multipart body without extra fields holds only the file part', () => {
	const body = multipart('B', {}, { data: Buffer.from('x'), fileName: 'f.png', mimeType: '' });
	assert.equal(
		body.toString(),
		'--B\r\nContent-Disposition: form-data; name="file"; filename="f.png"\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n--B--\r\n',
	);
});
