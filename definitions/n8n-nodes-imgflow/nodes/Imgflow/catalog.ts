import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import catalogJson from './catalog.json';

// catalog.json is written from catalog.Catalog (definitions/n8nnode.go);
// this file turns it into n8n parameters and says which catalog operation
// each node operation runs. A field added to the catalog appears in the node,
// and is sent to the API, without a change here.

export interface CatalogField {
	key: string;
	label: string;
	help: string;
	type: 'string' | 'text' | 'integer' | 'number' | 'boolean' | 'datetime' | 'file' | 'object' | 'list';
	required: boolean;
	in: 'body' | 'query' | 'path';
	choices: string[];
	default: string;
	example: string;
	/** A list's record fields: in the node, each input item is one record. */
	fields?: CatalogField[];
}

export interface CatalogOperation {
	key: string;
	noun: string;
	label: string;
	description: string;
	help: string;
	kind: string;
	method: 'GET' | 'POST' | 'DELETE';
	path: string;
	query: Record<string, string>;
	inputs: CatalogField[];
	outputs: Array<{ key: string; label: string; type: string }>;
	/** For a hook trigger: the events its subscription takes (one fixed, or the event input's choices). */
	hookEvents: string[];
}

export interface Catalog {
	name: string;
	description: string;
	auth: { header: string; testMethod: string; testPath: string; fields: CatalogField[] };
	hooks: { create: string; delete: string };
	limits: { maxImageSize: number; maxWait: number; maxBatchItems: number; maxBatchBody: number };
	operations: CatalogOperation[];
}

export const catalog = catalogJson as unknown as Catalog;

/** How the node offers one catalog operation. */
export interface Offer {
	resource: string;
	operation: string;
	name: string;
	action: string;
	/** Where optional catalog fields go: a collection of this name. */
	collection: 'additionalFields' | 'filters';
	/** Parameter names that differ from the camelCase of the API key. */
	rename?: Record<string, string>;
	/**
	 * How the operation's list field is entered: each input item one record
	 * (Compress Many: absent), or one parameter whose entries, of this
	 * name, are the records (Make Image Sizes: a Size per variant).
	 */
	listEntry?: string;
}

/** The catalog operations the imgflow node runs, by catalog key. */
export const offers: Record<string, Offer> = {
	compress_image: {
		resource: 'image',
		operation: 'compress',
		name: 'Compress',
		action: 'Compress an image',
		collection: 'additionalFields',
	},
	get_job: {
		resource: 'job',
		operation: 'get',
		name: 'Get',
		action: 'Get a job',
		collection: 'additionalFields',
		rename: { id: 'jobId' },
	},
	job_finished_polling: {
		resource: 'job',
		operation: 'getMany',
		name: 'Get Many',
		action: 'Get many jobs',
		collection: 'filters',
	},
	check_image: {
		resource: 'image',
		operation: 'check',
		name: 'Check',
		action: 'Check an image',
		collection: 'additionalFields',
	},
	compress_many: {
		resource: 'image',
		operation: 'compressMany',
		name: 'Compress Many',
		action: 'Compress many images as one batch',
		collection: 'additionalFields',
		// The batch's metadata; each item's is the record field metadata.
		rename: { metadata: 'batchMetadata' },
	},
	compress_variants: {
		resource: 'image',
		operation: 'makeSizes',
		name: 'Make Image Sizes',
		action: 'Make sizes of an image',
		collection: 'additionalFields',
		listEntry: 'Size',
	},
	check_account: {
		resource: 'account',
		operation: 'get',
		name: 'Get',
		action: 'Get the account',
		collection: 'additionalFields',
	},
};

/**
 * Catalog operations the imgflow node does not run, and why. A new catalog
 * operation must be added to offers or here (test/catalog.test.js).
 */
export const notOffered: Record<string, string> = {
	compress_image_callback:
		'Compress waits for the job itself (inline wait, then polling), so no callback URL is needed',
	job_finished: 'offered by the imgflow Trigger node (events)',
	credits_low: 'offered by the imgflow Trigger node (events: account.credits_low, with its threshold)',
	batch_finished: 'offered by the imgflow Trigger node (events: batch.finished)',
};

/**
 * The catalog fields of a job's transform (resize, convert, keep metadata:
 * free on top of the job's one credit): they go to an Image Options
 * collection of their own, apart from the Additional Fields.
 */
export const transformFields = ['resize', 'resize_method', 'resize_enlarge', 'convert', 'background', 'preserve'];

/** The parameter name of the Image Options collection. */
export const transformCollection = 'imageOptions';

/** The collection an optional catalog field of an operation goes to. */
export function collectionOf(offer: Offer, field: CatalogField): string {
	return transformFields.includes(field.key) ? transformCollection : offer.collection;
}

/** The compress fields that carry the image; the Input Type picks one. */
export const sourceFields: Record<string, string> = { image_url: 'url', image_base64: 'base64' };

export function catalogOperation(key: string): CatalogOperation {
	const op = catalog.operations.find((o) => o.key === key);
	if (!op) throw new Error(`catalog has no operation ${key}`);
	return op;
}

/** The catalog operation behind a node resource and operation. */
export function offeredOperation(resource: string, operation: string): CatalogOperation {
	for (const [key, offer] of Object.entries(offers)) {
		if (offer.resource === resource && offer.operation === operation) return catalogOperation(key);
	}
	throw new Error(`no catalog operation for ${resource}:${operation}`);
}

export function camelCase(key: string): string {
	return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** The n8n parameter name of a catalog field of an operation. */
export function paramName(opKey: string, field: CatalogField): string {
	return offers[opKey]?.rename?.[field.key] ?? camelCase(field.key);
}

/**
 * The n8n parameter name of a list's record field: the record is the
 * input item, so its fields are per-item parameters (expressions read the
 * item), named apart from the operation's own fields.
 */
export function recordParamName(field: CatalogField): string {
	return sourceFields[field.key] ? camelCase(field.key) : camelCase(`item_${field.key}`);
}

/** The Image operations that read each item's image by the Input Type. */
export const imageOperations = ['compress', 'check', 'validate', 'compressMany', 'makeSizes'];

/** Operations whose image fields are Compress's (one set of image parameters). */
const imageAsCompress = ['check_image', 'compress_variants'];

function sentence(text: string): string {
	const t = text.trim();
	return t === '' || /[.!?]$/.test(t) ? t : `${t}.`;
}

/** One n8n parameter for one catalog field. */
export function fieldProperty(opKey: string, field: CatalogField): INodeProperties {
	const base = {
		displayName: field.label,
		name: paramName(opKey, field),
		description: sentence(field.help),
	};
	if (field.choices.length > 0) {
		const options: INodePropertyOptions[] = field.choices.map((c) => ({ name: c, value: c }));
		return {
			...base,
			type: 'options',
			options,
			default: field.default || field.choices[0],
		};
	}
	switch (field.type) {
		case 'integer':
		case 'number':
			return { ...base, type: 'number', default: Number(field.default) || 0 };
		case 'boolean':
			return { ...base, type: 'boolean', default: field.default === 'true' };
		case 'datetime':
			return { ...base, type: 'dateTime', default: field.default };
		case 'object':
			return { ...base, type: 'json', default: field.default || '{}' };
		case 'text':
			return {
				...base,
				type: 'string',
				typeOptions: { rows: 4 },
				default: field.default,
				placeholder: field.example.slice(0, 60),
			};
		default:
			return { ...base, type: 'string', default: field.default, placeholder: field.example };
	}
}

/**
 * The parameters of every offered operation: required fields on their own,
 * optional ones in the operation's collection; the image fields of Compress
 * show for their Input Type only.
 */
export function catalogProperties(): INodeProperties[] {
	const props: INodeProperties[] = [];
	for (const [key, offer] of Object.entries(offers)) {
		const op = catalogOperation(key);
		const show = { resource: [offer.resource], operation: [offer.operation] };
		const optional: INodeProperties[] = [];
		const transform: INodeProperties[] = [];
		for (const field of op.inputs) {
			if (field.type === 'list' && offer.listEntry) {
				props.push(listProperty(key, offer.listEntry, field, show));
				continue;
			}
			if (field.type === 'list') {
				// One record per input item: the image by the Input Type (the
				// shared image parameters), the record's other fields optional.
				for (const child of field.fields ?? []) {
					if (sourceFields[child.key]) continue;
					optional.push({ ...fieldProperty(key, child), name: recordParamName(child),
						displayName: `Item ${child.label}` });
				}
				continue;
			}
			const prop = fieldProperty(key, field);
			const source = sourceFields[field.key];
			if (imageAsCompress.includes(key) && source) {
				continue; // read as Compress reads it, with its parameters
			}
			if (key === 'compress_image' && source) {
				props.push({
					...prop,
					required: true,
					// Check and Validate read the image the same way.
					displayOptions: {
						show: { resource: ['image'], operation: imageOperations, inputType: [source] },
					},
				});
			} else if (field.required) {
				props.push({ ...prop, required: true, displayOptions: { show } });
			} else if (collectionOf(offer, field) === transformCollection) {
				transform.push(prop);
			} else {
				optional.push(prop);
			}
		}
		if (transform.length > 0) {
			props.push({
				displayName: 'Image Options',
				name: transformCollection,
				type: 'collection',
				placeholder: 'Add Option',
				description: 'Resize, convert and keep metadata before compressing: free, the job still costs one credit',
				default: {},
				displayOptions: { show },
				options: transform.sort((a, b) => a.displayName.localeCompare(b.displayName)),
			});
		}
		if (optional.length > 0) {
			props.push({
				displayName: offer.collection === 'filters' ? 'Filters' : 'Additional Fields',
				name: offer.collection,
				type: 'collection',
				placeholder: offer.collection === 'filters' ? 'Add Filter' : 'Add Field',
				default: {},
				displayOptions: { show },
				options: optional.sort((a, b) => a.displayName.localeCompare(b.displayName)),
			});
		}
	}
	return props;
}

/**
 * A list field entered as one parameter: a fixed collection whose entries
 * (named entry, such as Size) are the records, each field a value. A
 * choice no record must make (a size's Convert To) starts empty: the API's
 * own default.
 */
export function listProperty(
	opKey: string,
	entry: string,
	field: CatalogField,
	show: Record<string, string[]>,
): INodeProperties {
	const values = (field.fields ?? []).map((child): INodeProperties => {
		const prop = fieldProperty(opKey, child);
		if (child.required) return { ...prop, required: true };
		if (prop.type === 'options') {
			const options = [{ name: 'Same as the Image', value: '' }, ...(prop.options as INodePropertyOptions[])];
			return { ...prop, options, default: '' };
		}
		return prop;
	});
	return {
		displayName: field.label,
		name: paramName(opKey, field),
		type: 'fixedCollection',
		typeOptions: { multipleValues: true },
		placeholder: `Add ${entry}`,
		description: sentence(field.help),
		default: {},
		required: field.required,
		displayOptions: { show },
		options: [{ displayName: entry, name: listEntryName(entry), values }],
	};
}

/** The parameter name of a list parameter's entries: Size, size. */
export function listEntryName(entry: string): string {
	return entry.charAt(0).toLowerCase() + entry.slice(1).replace(/\s+/g, '');
}

/** The Operation selector of one resource, from the offers. */
export function operationProperty(resource: string, extra: INodePropertyOptions[] = []): INodeProperties {
	const options: INodePropertyOptions[] = [...extra];
	for (const [key, offer] of Object.entries(offers)) {
		if (offer.resource !== resource) continue;
		options.push({
			name: offer.name,
			value: offer.operation,
			action: offer.action,
			description: catalogOperation(key).description,
		});
	}
	options.sort((a, b) => a.name.localeCompare(b.name));
	return {
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: [resource] } },
		options,
		default: String(options[0].value),
	};
}

/** The catalog's hook triggers, in catalog order. */
export function hookTriggers(): CatalogOperation[] {
	return catalog.operations.filter((o) => o.kind === 'hook_trigger');
}

/** Every event a hook trigger of the catalog subscribes. */
export function hookEvents(): string[] {
	return hookTriggers().flatMap((o) => o.hookEvents);
}
