// The node and catalog.Catalog agree: every catalog operation is offered by
// a node (or deliberately not, with a reason), every input field of an offered
// operation is a node parameter, and the credential uses the catalog's auth.
// catalog.json itself is checked against the Go catalog by
// definitions/n8nnode_test.go, so a catalog change reaches this test too.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
	catalog,
	offers,
	notOffered,
	paramName,
	recordParamName,
	sourceFields,
	hookEvents,
	camelCase,
	listEntryName,
} = require('../dist/nodes/Imgflow/catalog');
const { Imgflow } = require('../dist/nodes/Imgflow/Imgflow.node');
const { ImgflowTrigger } = require('../dist/nodes/ImgflowTrigger/ImgflowTrigger.node');
const { ImgflowApi } = require('../dist/credentials/ImgflowApi.credentials');
const pkg = require('../package.json');

const node = new Imgflow().description;
const trigger = new ImgflowTrigger().description;

// Every parameter, collections opened, with the resource/operation it shows for.
function params(props, show = {}) {
	const out = [];
	for (const p of props) {
		const s = { ...show, ...(p.displayOptions?.show ?? {}) };
		out.push({ name: p.name, show: s, prop: p });
		if (p.type === 'collection') out.push(...params(p.options, s));
	}
	return out;
}
const all = params(node.properties);

test('every catalog operation is offered by a node or deliberately left out', () => {
	for (const op of catalog.operations) {
		assert.ok(offers[op.key] || notOffered[op.key], `catalog operation ${op.key} is neither offered nor in notOffered`);
	}
	for (const key of [...Object.keys(offers), ...Object.keys(notOffered)]) {
		assert.ok(catalog.operations.some((op) => op.key === key), `${key} is not a catalog operation any more`);
	}
});

test('every input field of an offered operation is a parameter of its operation', () => {
	for (const [key, offer] of Object.entries(offers)) {
		const op = catalog.operations.find((o) => o.key === key);
		const shows = (p) => p.show.resource?.includes(offer.resource) && p.show.operation?.includes(offer.operation);
		for (const field of op.inputs.flatMap((f) => (f.type === 'list' ? f.fields : [f]))) {
			const list = op.inputs.find((f) => f.type === 'list' && f.fields.includes(field));
			if (list && offer.listEntry) {
				// One parameter for the list, an entry per record, a value per field.
				const param = all.find((p) => p.name === paramName(key, list) && shows(p));
				assert.ok(param, `${key}.${list.key} has no parameter for ${offer.resource}:${offer.operation}`);
				assert.equal(param.prop.type, 'fixedCollection');
				const entry = param.prop.options.find((o) => o.name === listEntryName(offer.listEntry));
				const value = entry?.values.find((v) => v.name === camelCase(field.key));
				assert.ok(value, `${key}.${list.key}.${field.key} has no value ${camelCase(field.key)} in its ${offer.listEntry}`);
				assert.equal(value.displayName, field.label);
				if (field.choices.length) {
					const want = field.required ? field.choices : ['', ...field.choices];
					assert.deepEqual(value.options.map((o) => o.value), want, `${key}.${list.key}.${field.key} choices`);
				}
				continue;
			}
			const record = Boolean(list);
			const name = record ? recordParamName(field) : paramName(key, field);
			const found = all.find((p) => p.name === name && shows(p));
			assert.ok(found, `${key}.${field.key} has no parameter ${name} for ${offer.resource}:${offer.operation}`);
			assert.equal(found.prop.displayName, record && !sourceFields[field.key] ? `Item ${field.label}` : field.label);
			if (field.choices.length) {
				assert.deepEqual(found.prop.options.map((o) => o.value), field.choices, `${key}.${field.key} choices`);
			}
		}
	}
});

test('each Operation selector offers exactly the mapped operations (plus Validate)', () => {
	for (const resource of ['account', 'image', 'job']) {
		const sel = node.properties.find((p) => p.name === 'operation' && p.displayOptions.show.resource[0] === resource);
		const want = Object.values(offers).filter((o) => o.resource === resource).map((o) => o.operation);
		if (resource === 'image') want.push('validate');
		assert.deepEqual(sel.options.map((o) => o.value).sort(), want.sort());
	}
});

test('Compress Many takes each input item as one record of the catalog\'s list, beside the batch\'s own fields', () => {
	const op = catalog.operations.find((o) => o.key === 'compress_many');
	const list = op.inputs.find((f) => f.type === 'list');
	assert.ok(list && list.fields.length >= 4, 'compress_many has a list input with its record fields');
	const names = all.filter((p) => p.show.operation?.includes('compressMany')).map((p) => p.name);
	for (const f of list.fields) assert.ok(names.includes(recordParamName(f)), `record field ${f.key} is a parameter`);
	assert.ok(names.includes('batchMetadata'), 'the batch metadata is a parameter apart from each item\'s');
	assert.notEqual(recordParamName(list.fields.find((f) => f.key === 'metadata')), 'batchMetadata');
	for (const p of ['inputType', 'binaryPropertyName', 'imageUrl', 'imageBase64', 'download', 'timeout']) {
		assert.ok(names.includes(p), `Compress Many shows ${p}`);
	}
	assert.ok(!names.includes('concurrency'), 'one request for all items: no concurrency option');
});

test('Make Image Sizes takes the sizes as one required list, a Size per variant, and reads the image as Compress', () => {
	const sizes = node.properties.find((p) => p.name === 'variants' && p.displayOptions.show.operation.includes('makeSizes'));
	assert.ok(sizes, 'no Sizes parameter for image:makeSizes');
	assert.equal(sizes.type, 'fixedCollection');
	assert.equal(sizes.required, true);
	assert.equal(sizes.typeOptions.multipleValues, true);
	assert.deepEqual(sizes.options.map((o) => o.name), ['size']);
	const convert = sizes.options[0].values.find((v) => v.name === 'convert');
	assert.equal(convert.default, '', 'a size keeps the image\'s format unless told');
	const names = all.filter((p) => p.show.operation?.includes('makeSizes')).map((p) => p.name);
	for (const p of ['inputType', 'binaryPropertyName', 'imageUrl', 'imageBase64', 'download', 'outputBinaryPropertyName', 'timeout', 'filename', 'metadata']) {
		assert.ok(names.includes(p), `Make Image Sizes shows ${p}`);
	}
	for (const p of ['resize', 'convert', 'concurrency', 'imageOptions']) {
		assert.ok(!names.includes(p), `Make Image Sizes shows ${p}: each size carries its own options`);
	}
});

test('the image fields follow the Input Type, and the issue\'s names hold', () => {
	assert.deepEqual(Object.keys(sourceFields).map((k) => paramName('compress_image', { key: k })), ['imageUrl', 'imageBase64']);
	const inputType = all.find((p) => p.name === 'inputType');
	assert.equal(inputType.prop.default, 'binary');
	assert.deepEqual(inputType.prop.options.map((o) => o.value).sort(), ['base64', 'binary', 'url']);
	for (const name of ['binaryPropertyName', 'outputBinaryPropertyName', 'download', 'timeout', 'concurrency']) {
		assert.ok(all.some((p) => p.name === name), `parameter ${name}`);
	}
	assert.equal(all.find((p) => p.name === 'timeout').prop.default, 300);
	assert.equal(all.find((p) => p.name === 'concurrency').prop.default, 5);
	assert.equal(all.find((p) => p.name === 'imageUrl').show.inputType[0], 'url');
});

test('the credential sends the key the way the catalog says and tests with its route', () => {
	const cred = new ImgflowApi();
	assert.equal(cred.name, 'imgflowApi');
	assert.deepEqual(Object.keys(cred.authenticate.properties.headers), [catalog.auth.header]);
	assert.equal(cred.test.request.url, catalog.auth.testPath);
	assert.equal(cred.test.request.method, catalog.auth.testMethod);
	assert.equal(cred.properties.find((p) => p.name === 'baseUrl').default, 'http://127.0.0.1:8080');
	assert.equal(cred.properties.find((p) => p.name === 'apiKey').typeOptions.password, true);
});

test('the trigger offers the catalog hook events', () => {
	const events = trigger.properties.find((p) => p.name === 'events');
	assert.equal(events.type, 'multiOptions');
	assert.deepEqual(events.options.map((o) => o.value).sort(), hookEvents().slice().sort());
	assert.deepEqual(hookEvents().slice().sort(), [
		'account.credits_low',
		'batch.finished',
		'job.completed',
		'job.failed',
		'job.finished',
	]);
	// Credits Low's threshold shows when its event is chosen.
	const threshold = trigger.properties.find((p) => p.name === 'threshold');
	assert.equal(threshold.type, 'number');
	assert.equal(threshold.default, 50);
	assert.deepEqual(threshold.displayOptions.show.events, ['account.credits_low']);
});

test('the package is a community node package with the names flows rely on', () => {
	assert.equal(pkg.name, 'n8n-nodes-imgflow');
	assert.ok(pkg.keywords.includes('n8n-community-node-package'));
	assert.equal(pkg.license, 'MIT');
	assert.equal(pkg.dependencies, undefined, 'no runtime dependencies');
	assert.equal(node.name, 'imgflow');
	assert.equal(trigger.name, 'imgflowTrigger');
	assert.equal(node.usableAsTool, true);
	for (const f of [...pkg.n8n.nodes, ...pkg.n8n.credentials]) require(`../${f}`);
});

test('resize, convert and keep metadata are an Image Options collection of Compress, Check and Compress Many', () => {
	const { transformFields, transformCollection } = require('../dist/nodes/Imgflow/catalog');
	for (const operation of ['compress', 'check', 'compressMany']) {
		const coll = node.properties.find(
			(p) => p.name === transformCollection && p.displayOptions.show.operation.includes(operation),
		);
		assert.ok(coll, `no Image Options collection for image:${operation}`);
		assert.equal(coll.type, 'collection');
		assert.deepEqual(
			coll.options.map((o) => o.name).sort(),
			transformFields.map((k) => paramName('compress_image', { key: k })).sort(),
			`image:${operation} Image Options`,
		);
		const extra = node.properties.find(
			(p) => p.name === 'additionalFields' && p.displayOptions.show.operation.includes(operation),
		);
		const names = transformFields.map((k) => paramName('compress_image', { key: k }));
		for (const o of extra?.options ?? []) {
			assert.ok(!names.includes(o.name), `${o.name} is also in Additional Fields`);
		}
	}
});
