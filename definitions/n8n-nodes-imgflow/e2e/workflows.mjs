// The workflows the real-n8n run imports: built here so paths, ports and the
// credential id are filled in; `node e2e/workflows.mjs OUT_DIR` writes them
// with placeholders, ready to import by hand.

const cred = { imgflowApi: { id: 'imgflowE2E', name: 'imgflow (e2e)' } };
let column = 0;
const node = (name, type, typeVersion, parameters, extra = {}) => ({
	id: `e2e-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
	name,
	type,
	typeVersion,
	position: [240 + 220 * column++, 300],
	parameters,
	...extra,
});
const imgflow = (name, parameters, extra = {}) =>
	node(name, 'n8n-nodes-imgflow.imgflow', 1, parameters, { credentials: cred, ...extra });
const code = (name, jsCode) =>
	node(name, 'n8n-nodes-base.code', 2, { mode: 'runOnceForAllItems', language: 'javaScript', jsCode });
const chain = (name, id, nodes) => {
	const connections = {};
	for (let i = 0; i + 1 < nodes.length; i++) {
		connections[nodes[i].name] = { main: [[{ node: nodes[i + 1].name, type: 'main', index: 0 }]] };
	}
	return { id, name, nodes, connections, active: false, settings: { executionOrder: 'v1' }, pinData: {} };
};

// Checks shared by the Code nodes: an image's type by its first bytes.
const sniff = `
const sniff = (b) => {
	if (b.subarray(0, 8).toString('hex') === '89504e470d0a1a0a') return 'image/png';
	if (b.subarray(0, 3).toString('hex') === 'ffd8ff') return 'image/jpeg';
	if (b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
	if (b.toString('latin1', 4, 8) === 'ftyp') return 'image/avif';
	return 'unknown';
};
const checkCompressed = async (items, label, skip = -1) => {
	for (let i = 0; i < items.length; i++) {
		if (i === skip) continue;
		const { json, binary } = items[i];
		const what = label + ' item ' + i + ' (' + (json.input && (json.input.filename || json.input.url)) + ')';
		if (json.status !== 'completed') throw new Error(what + ': status ' + json.status + ' ' + JSON.stringify(json.error || json));
		if (!binary || !binary.data) throw new Error(what + ': no output binary "data"');
		const buf = await this.helpers.getBinaryDataBuffer(i, 'data');
		const r = json.result;
		if (buf.length !== r.compressed_size) throw new Error(what + ': binary has ' + buf.length + ' bytes, result says ' + r.compressed_size);
		if (!(r.compressed_size < r.original_size)) throw new Error(what + ': not smaller: ' + r.compressed_size + ' >= ' + r.original_size);
		if (sniff(buf) !== r.mime_type || binary.data.mimeType !== r.mime_type) throw new Error(what + ': bytes are ' + sniff(buf) + ', binary says ' + binary.data.mimeType + ', result says ' + r.mime_type);
		if (json.input.mime_type && json.input.mime_type !== r.mime_type) throw new Error(what + ': type changed from ' + json.input.mime_type + ' to ' + r.mime_type);
		if (binary.data.fileName !== r.filename) throw new Error(what + ': file name ' + binary.data.fileName + ', result says ' + r.filename);
	}
};
`;

/**
 * One manual workflow for every imgflow node check: binary in and out, URL
 * in, a broken image with Continue On Fail, and the credits going down by
 * exactly the jobs made.
 */
export function compressWorkflow({ imagesDir, mixedDir, sampleUrls }) {
	column = 0;
	const nodes = [
		node('Start', 'n8n-nodes-base.manualTrigger', 1, {}),
		imgflow('Account Before', { resource: 'account', operation: 'get' }, { executeOnce: true }),
		node('Read Images', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${imagesDir}/*`, options: {} }, { executeOnce: true }),
		imgflow('Compress Binary', { resource: 'image', operation: 'compress', inputType: 'binary', binaryPropertyName: 'data', options: {} }),
		code(
			'Check Binary',
			`${sniff}
const inputs = $('Read Images').all();
const out = $input.all();
if (out.length !== inputs.length) throw new Error('Compress Binary: ' + out.length + ' items for ' + inputs.length + ' files');
await checkCompressed(out, 'Compress Binary');
for (let i = 0; i < out.length; i++) {
	if (out[i].binary.data.fileName !== inputs[i].binary.data.fileName) throw new Error('file name changed: ' + inputs[i].binary.data.fileName + ' -> ' + out[i].binary.data.fileName);
	if (out[i].binary.data.mimeType !== inputs[i].binary.data.mimeType) throw new Error('type changed: ' + inputs[i].binary.data.mimeType + ' -> ' + out[i].binary.data.mimeType);
}
return out.map((item) => ({ json: { id: item.json.id, file: item.binary.data.fileName, saved: item.json.result.compression_ratio } }));`,
		),
		code('URL Items', `return ${JSON.stringify(sampleUrls)}.map((url) => ({ json: { url } }));`),
		imgflow('Compress URL', {
			resource: 'image',
			operation: 'compress',
			inputType: 'url',
			imageUrl: '={{ $json.url }}',
			options: { concurrency: 2 },
		}),
		code(
			'Check URL',
			`${sniff}
const out = $input.all();
if (out.length !== ${sampleUrls.length}) throw new Error('Compress URL: ' + out.length + ' items');
await checkCompressed(out, 'Compress URL');
return out.map((item) => ({ json: { id: item.json.id, url: item.json.input.url } }));`,
		),
		node('Read Mixed', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${mixedDir}/*`, options: {} }, { executeOnce: true }),
		imgflow(
			'Compress Mixed',
			{ resource: 'image', operation: 'compress', inputType: 'binary', binaryPropertyName: 'data', options: {} },
			{ onError: 'continueRegularOutput' },
		),
		code(
			'Check Mixed',
			`${sniff}
const files = $('Read Mixed').all().map((i) => i.binary.data.fileName);
const out = $input.all();
if (out.length !== files.length) throw new Error('Compress Mixed: ' + out.length + ' items for ' + files.length + ' files');
const failed = out.filter((i) => i.json.error);
const good = out.filter((i) => !i.json.error);
if (failed.length !== 1) throw new Error('want exactly one error item, got ' + failed.length + ': ' + JSON.stringify(out.map((i) => i.json)));
const bad = out.indexOf(failed[0]);
if (files[bad] !== 'not-an-image.png') throw new Error('the error item is ' + files[bad] + ', want not-an-image.png');
if (!failed[0].json.code || typeof failed[0].json.error !== 'string') throw new Error('error item lacks {error, code}: ' + JSON.stringify(failed[0].json));
await checkCompressed(out, 'Compress Mixed', bad);
return [{ json: { errorCode: failed[0].json.code, completed: good.length } }];`,
		),
		imgflow('Account After', { resource: 'account', operation: 'get' }, { executeOnce: true }),
		code(
			'Check Credits',
			`const before = $('Account Before').first().json.credits_remaining;
const after = $input.first().json.credits_remaining;
const made = $('Check Binary').all().length + $('Check URL').all().length + $('Check Mixed').first().json.completed;
if (typeof before !== 'number' || typeof after !== 'number') throw new Error('credits_remaining missing: ' + before + ', ' + after);
if (before - after !== made) throw new Error('credits went from ' + before + ' to ' + after + ' for ' + made + ' completed jobs');
return [{ json: { ok: true, credits_before: before, credits_after: after, jobs_completed: made, error_code: $('Check Mixed').first().json.errorCode } }];`,
		),
		imgflow('Get Many Jobs', { resource: 'job', operation: 'getMany', returnAll: false, limit: 3, filters: { status: 'completed' } }, { executeOnce: true }),
		imgflow('Get Job', { resource: 'job', operation: 'get', jobId: '={{ $json.id }}', additionalFields: {}, options: { download: true } }),
		code(
			'Check Jobs',
			`${sniff}
const listed = $('Get Many Jobs').all().map((i) => i.json);
const out = $input.all();
if (listed.length !== 3 || listed.some((j) => j.status !== 'completed')) throw new Error('Get Many Jobs (limit 3, completed): ' + JSON.stringify(listed.map((j) => [j.id, j.status])));
if (listed[0].created_at < listed[2].created_at) throw new Error('Get Many Jobs is not newest first');
await checkCompressed(out, 'Get Job');
for (let i = 0; i < out.length; i++) if (out[i].json.id !== listed[i].id) throw new Error('Get Job returned ' + out[i].json.id + ' for ' + listed[i].id);
return [{ json: { listed: listed.length, fetched: out.length } }];`,
		),
		node('Read For Validate', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${mixedDir}/*`, options: {} }, { executeOnce: true }),
		imgflow('Validate', { resource: 'image', operation: 'validate', inputType: 'binary', binaryPropertyName: 'data' }),
		code(
			'Check Validate',
			`const files = $('Read For Validate').all().map((i) => i.binary.data.fileName);
const out = $input.all().map((i) => i.json);
for (let i = 0; i < out.length; i++) {
	const want = files[i] !== 'not-an-image.png';
	if (out[i].valid !== want) throw new Error('Validate ' + files[i] + ': ' + JSON.stringify(out[i]));
	if (want && out[i].mime_type !== 'image/png') throw new Error('Validate ' + files[i] + ' type ' + out[i].mime_type);
	if (!want && !out[i].problems.length) throw new Error('Validate ' + files[i] + ' gave no problem');
}
const credits = $('Account After').first().json.credits_remaining;
if (out.some((v) => v.credits_remaining !== credits)) throw new Error('Validate used a credit');
return [{ json: { validated: out.length, invalid: out.filter((v) => !v.valid).map((v) => v.problems.join('; ')) } }];`,
		),
		// Compress Many: every file one image of one batch; an output item per
		// file, in order, the broken one an error item (Continue On Fail).
		node('Read For Many', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${mixedDir}/*`, options: {} }, { executeOnce: true }),
		imgflow(
			'Compress Many',
			{
				resource: 'image',
				operation: 'compressMany',
				inputType: 'binary',
				binaryPropertyName: 'data',
				additionalFields: { batchMetadata: '{"e2e":"many"}' },
				options: {},
			},
			{ onError: 'continueRegularOutput' },
		),
		code(
			'Check Many',
			`${sniff}
const files = $('Read For Many').all().map((i) => i.binary.data.fileName);
const out = $input.all();
if (out.length !== files.length) throw new Error('Compress Many: ' + out.length + ' items for ' + files.length + ' files');
const bad = files.indexOf('not-an-image.png');
if (!out[bad].json.error || !out[bad].json.code) throw new Error('not-an-image.png is no error item: ' + JSON.stringify(out[bad].json));
await checkCompressed(out, 'Compress Many', bad);
const good = out.filter((i, n) => n !== bad);
const batches = new Set(good.map((i) => i.json.batch_id));
if (batches.size !== 1) throw new Error('Compress Many made ' + batches.size + ' batches for ' + files.length + ' files, want 1');
for (let n = 0; n < out.length; n++) {
	if (n !== bad && out[n].json.index !== n) throw new Error('item ' + n + ' is the batch image number ' + out[n].json.index);
	if (out[n].pairedItem.item !== n) throw new Error('item ' + n + ' is paired with ' + out[n].pairedItem.item);
}
return [{ json: { batch: [...batches][0], completed: good.length, charged: good.filter((i) => !i.json.deduplicated_from).length } }];`,
		),
		imgflow('Account After Many', { resource: 'account', operation: 'get' }, { executeOnce: true }),
		code(
			'Check Many Credits',
			`const before = $('Account After').first().json.credits_remaining;
const after = $input.first().json.credits_remaining;
const charged = $('Check Many').first().json.charged;
if (before - after !== charged) throw new Error('Compress Many: credits went from ' + before + ' to ' + after + ' for ' + charged + ' images compressed');
return [{ json: { ok: true, many_charged: charged } }];`,
		),
		// Make Image Sizes: one image in (a binary file, streamed from the
		// filesystem store), an item per size out, in the order listed, each
		// with its file and the set's srcset; the Max Size kept.
		node('Read For Sizes', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${imagesDir}/photo.jpg`, options: {} }, { executeOnce: true }),
		imgflow('Make Sizes', {
			resource: 'image',
			operation: 'makeSizes',
			inputType: 'binary',
			binaryPropertyName: 'data',
			variants: {
				size: [
					{ id: 'sm', resize: '32x', convert: 'webp', target: '' },
					{ id: 'md', resize: '64x', convert: '', target: '' },
					{ id: 'lg', resize: '96x', convert: '', target: '3KB' },
				],
			},
			additionalFields: { filename: 'photo.jpg' },
			options: {},
		}),
		code(
			'Check Sizes',
			`${sniff}
const out = $input.all();
const want = [['sm', 32, 'image/webp'], ['md', 64, 'image/jpeg'], ['lg', 96, 'image/jpeg']];
if (out.length !== want.length) throw new Error('Make Sizes: ' + out.length + ' items for ' + want.length + ' sizes: ' + JSON.stringify(out.map((i) => i.json)));
const srcset = out[0].json.srcset;
for (let n = 0; n < out.length; n++) {
	const { json, binary } = out[n];
	const [id, width, type] = want[n];
	const what = 'Make Sizes item ' + n + ' (' + json.id + ')';
	if (json.id !== id || json.width !== width || json.mime_type !== type || json.format !== type.slice(6)) throw new Error(what + ': ' + JSON.stringify(json));
	if (!binary || !binary.data) throw new Error(what + ': no output binary "data"');
	const buf = await this.helpers.getBinaryDataBuffer(n, 'data');
	if (buf.length !== json.bytes || sniff(buf) !== type || binary.data.mimeType !== type) throw new Error(what + ': binary ' + buf.length + ' bytes of ' + sniff(buf) + ', json says ' + json.bytes + ' of ' + type);
	if (binary.data.fileName !== json.filename || json.filename !== 'photo-' + id + (type === 'image/webp' ? '.webp' : '.jpg')) throw new Error(what + ': file name ' + binary.data.fileName + ', json says ' + json.filename);
	if (!json.url || !json.job_id || !json.set_id || json.set_id !== out[0].json.set_id) throw new Error(what + ': url, job_id or set_id missing: ' + JSON.stringify(json));
	if (json.srcset !== srcset || !json.picture.includes('<picture>')) throw new Error(what + ': srcset or picture differs from the first item');
}
if (out[2].json.bytes > 3000) throw new Error('lg is ' + out[2].json.bytes + ' bytes, over its Max Size 3KB');
if (!srcset.includes(' 64w') || !srcset.includes(' 96w')) throw new Error('srcset ' + srcset + ': want the JPEG sizes by width');
return [{ json: { ok: true, sizes: out.length, charged: out.filter((i) => !i.json.job.deduplicated_from).length, srcset } }];`,
		),
		imgflow('Account After Sizes', { resource: 'account', operation: 'get' }, { executeOnce: true }),
		code(
			'Check Sizes Credits',
			`const before = $('Account After Many').first().json.credits_remaining;
const after = $input.first().json.credits_remaining;
const charged = $('Check Sizes').first().json.charged;
if (charged !== 3 || before - after !== charged) throw new Error('Make Sizes: credits went from ' + before + ' to ' + after + ' for ' + charged + ' sizes made, want 3');
return [{ json: { ok: true, sizes_charged: charged } }];`,
		),
	];
	return chain('imgflow e2e: compress', 'imgflowE2ECompress', nodes);
}

/**
 * The trigger workflow: imgflow Trigger (job.completed) → the job is handed
 * to the test's loopback listener, which proves the workflow ran and what it
 * received.
 */
export function triggerWorkflow({ reportUrl }) {
	column = 0;
	const trigger = node(
		'imgflow Trigger',
		'n8n-nodes-imgflow.imgflowTrigger',
		1,
		{ events: ['job.completed'] },
		{ credentials: cred, webhookId: '5b0c3f0e-4a55-4b8e-9d61-6f1f4a2b7c10' },
	);
	const report = node('Report', 'n8n-nodes-base.httpRequest', 4.4, {
		method: 'POST',
		url: reportUrl,
		sendBody: true,
		specifyBody: 'json',
		jsonBody: '={{ JSON.stringify({ id: $json.id, status: $json.status, event: $json.event, file_url: $json.result.file_url }) }}',
		options: {},
	});
	return chain('imgflow e2e: trigger', 'imgflowE2ETrigger', [trigger, report]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const fs = await import('node:fs');
	const out = process.argv[2] || '.';
	fs.mkdirSync(out, { recursive: true });
	const compress = compressWorkflow({
		imagesDir: '/data/images',
		mixedDir: '/data/mixed',
		sampleUrls: ['http://127.0.0.1:8080/samples/photo.jpg'],
	});
	fs.writeFileSync(`${out}/compress.json`, JSON.stringify(compress, null, 2) + '\n');
	const trigger = triggerWorkflow({ reportUrl: 'http://127.0.0.1:9999/report' });
	fs.writeFileSync(`${out}/trigger.json`, JSON.stringify(trigger, null, 2) + '\n');
}

/**
 * One large image (9 MiB) read from disk in filesystem binary mode,
 * compressed from n8n's store and back into it: the node streams both ways.
 */
export function bigWorkflow({ bigDir, size }) {
	column = 0;
	const nodes = [
		node('Start', 'n8n-nodes-base.manualTrigger', 1, {}),
		node('Read Big Image', 'n8n-nodes-base.readWriteFile', 1.1, { fileSelector: `${bigDir}/*`, options: {} }, { executeOnce: true }),
		imgflow('Compress Big', { resource: 'image', operation: 'compress', inputType: 'binary', binaryPropertyName: 'data', options: {} }),
		code(
			'Check Big',
			`${sniff}
const out = $input.all();
if (out.length !== 1) throw new Error('Compress Big: ' + out.length + ' items');
await checkCompressed(out, 'Compress Big');
const j = out[0].json;
if (j.input.size !== ${size} || j.input.kind !== 'upload') throw new Error('the API got ' + j.input.size + ' bytes as ' + j.input.kind + ', want ${size} as upload');
if (!out[0].binary.data.id) throw new Error('the output binary is not in the filesystem store: ' + JSON.stringify(out[0].binary.data));
return [{ json: { ok: true, original: j.result.original_size, compressed: j.result.compressed_size } }];`,
		),
	];
	return chain('imgflow e2e: 9 MiB image, filesystem mode', 'imgflowE2EBig', nodes);
}

/**
 * n8n's own MCP Client node (no LLM) calls imgflow's MCP server at /mcp
 * (mcp/ in the repository): compress_image by URL, then the file of its
 * resource_link is downloaded and checked against the structured result.
 * Only on n8n releases that have the node (run.mjs checks).
 */
export function mcpClientWorkflow({ mcpUrl, imageUrl }) {
	column = 0;
	const nodes = [
		node('Start', 'n8n-nodes-base.manualTrigger', 1, {}),
		node(
			'MCP Compress',
			'@n8n/n8n-nodes-langchain.mcpClient',
			1.1,
			{
				serverTransport: 'httpStreamable',
				endpointUrl: mcpUrl,
				authentication: 'bearerAuth',
				tool: { __rl: true, mode: 'id', value: 'compress_image' },
				inputMode: 'json',
				jsonInput: JSON.stringify({ image_url: imageUrl, dedupe: false }),
				options: {},
			},
			{ credentials: { httpBearerAuth: { id: 'imgflowBearer', name: 'imgflow key (Bearer, e2e)' } } },
		),
		node('Download Link', 'n8n-nodes-base.httpRequest', 4.4, {
			url: "={{ $json.content.find((c) => c.type === 'resource_link').uri }}",
			options: { response: { response: { outputPropertyName: 'data', responseFormat: 'file' } } },
		}),
		code(
			'Check MCP',
			`const job = $('MCP Compress').first().json.structuredContent;
const link = $('MCP Compress').first().json.content.find((c) => c.type === 'resource_link');
if (!job || job.status !== 'completed') throw new Error('compress_image: ' + JSON.stringify($('MCP Compress').first().json).slice(0, 2000));
const buf = await this.helpers.getBinaryDataBuffer(0, 'data');
// (older n8n releases' MCP SDK drop resource_link's size)
if (buf.length !== job.result.compressed_size || (link.size !== undefined && link.size !== buf.length)) throw new Error('downloaded ' + buf.length + ' bytes; result says ' + job.result.compressed_size + ', link ' + link.size);
if (!(buf.length < job.result.original_size)) throw new Error('not smaller: ' + buf.length + ' >= ' + job.result.original_size);
if (link.mimeType !== job.result.mime_type) throw new Error('link type ' + link.mimeType + ', result ' + job.result.mime_type);
return [{ json: { ok: true, id: job.id, original: job.result.original_size, compressed: buf.length, type: link.mimeType } }];`,
		),
	];
	return chain('imgflow e2e: n8n MCP Client node', 'imgflowE2EMcp', nodes);
}
