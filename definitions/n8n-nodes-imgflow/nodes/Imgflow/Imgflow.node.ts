import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { nodeError } from './api';

import { catalogProperties, imageOperations, operationProperty } from './catalog';
import { compressMany } from './many';
import { runItem } from './operations';

// The option that reads and checks an image without compressing it; it has
// no API route (nothing to charge), so it is the node's own, not the catalog's.
const validateOption = {
	name: 'Validate',
	value: 'validate',
	action: 'Validate an image',
	description:
		'Checks that an image is a PNG, JPEG, WebP or AVIF within the account limit, without using a credit',
};

const imageOps = imageOperations;

const nodeProperties: INodeProperties[] = [
	{
		displayName: 'Input Type',
		name: 'inputType',
		type: 'options',
		displayOptions: { show: { resource: ['image'], operation: imageOps } },
		options: [
			{ name: 'Base64', value: 'base64', description: 'The image as base64 text or a data: URI' },
			{
				name: 'Binary File',
				value: 'binary',
				description: 'A file from an earlier node (Read Files From Disk, Google Drive, a form, an email)',
			},
			{ name: 'URL', value: 'url', description: 'A public URL the imgflow server fetches' },
		],
		default: 'binary',
		description: 'How the image reaches this node',
	},
	{
		displayName: 'Input Binary Field',
		name: 'binaryPropertyName',
		type: 'string',
		default: 'data',
		required: true,
		displayOptions: { show: { resource: ['image'], operation: imageOps, inputType: ['binary'] } },
		hint: 'The name of the input binary field that holds the image',
	},
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		displayOptions: { show: { resource: ['job'], operation: ['getMany'] } },
		default: false,
		description: 'Whether to return all results or only up to a given limit',
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		displayOptions: { show: { resource: ['job'], operation: ['getMany'], returnAll: [false] } },
		typeOptions: { minValue: 1 },
		default: 50,
		description: 'Max number of results to return',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: { show: { resource: ['image'], operation: ['compress'] } },
		options: [
			{
				displayName: 'Concurrency',
				name: 'concurrency',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 20 },
				default: 5,
				description: 'How many items are compressed at the same time',
			},
			{
				displayName: 'Download File',
				name: 'download',
				type: 'boolean',
				default: true,
				description:
					'Whether to put the compressed image in a binary field; off keeps only the JSON with file_url',
			},
			{
				displayName: 'Output Binary Field',
				name: 'outputBinaryPropertyName',
				type: 'string',
				default: 'data',
				description: 'The binary field the compressed image is written to',
			},
			{
				displayName: 'Timeout (Seconds)',
				name: 'timeout',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 300,
				description: 'How long to wait for each job to finish before the item fails',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: { show: { resource: ['image'], operation: ['compressMany'] } },
		options: [
			{
				displayName: 'Download Files',
				name: 'download',
				type: 'boolean',
				default: true,
				description:
					'Whether to put each compressed image in a binary field; off keeps only the JSON with file_url',
			},
			{
				displayName: 'Output Binary Field',
				name: 'outputBinaryPropertyName',
				type: 'string',
				default: 'data',
				description: 'The binary field each compressed image is written to',
			},
			{
				displayName: 'Timeout (Seconds)',
				name: 'timeout',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 600,
				description: 'How long to wait for every image of the batch to finish before the node fails',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: { show: { resource: ['image'], operation: ['makeSizes'] } },
		options: [
			{
				displayName: 'Download Files',
				name: 'download',
				type: 'boolean',
				default: true,
				description:
					'Whether to put each size in a binary field; off keeps only the JSON with its URL',
			},
			{
				displayName: 'Output Binary Field',
				name: 'outputBinaryPropertyName',
				type: 'string',
				default: 'data',
				description: 'The binary field each size is written to, one size per output item',
			},
			{
				displayName: 'Timeout (Seconds)',
				name: 'timeout',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 300,
				description: 'How long to wait for every size of an image to finish before the item fails',
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: { show: { resource: ['job'], operation: ['get'] } },
		options: [
			{
				displayName: 'Download File',
				name: 'download',
				type: 'boolean',
				default: false,
				description: 'Whether to put the compressed image of a completed job in a binary field',
			},
			{
				displayName: 'Output Binary Field',
				name: 'outputBinaryPropertyName',
				type: 'string',
				default: 'data',
				description: 'The binary field the compressed image is written to',
			},
		],
	},
];

export class Imgflow implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'imgflow',
		name: 'imgflow',
		icon: { light: 'file:../../icons/imgflow.svg', dark: 'file:../../icons/imgflow.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description: 'Compress PNG, JPEG, WebP and AVIF images with imgflow',
		defaults: { name: 'imgflow' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imgflowApi', required: true }],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				options: [
					{ name: 'Account', value: 'account' },
					{ name: 'Image', value: 'image' },
					{ name: 'Job', value: 'job' },
				],
				default: 'image',
			},
			operationProperty('account'),
			operationProperty('image', [validateOption]),
			operationProperty('job'),
			...nodeProperties,
			...catalogProperties(),
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const resource = this.getNodeParameter('resource', 0) as string;
		const operation = this.getNodeParameter('operation', 0) as string;
		if (resource === 'image' && operation === 'compressMany') {
			// Every input item is one image of one batch (or a few, past the
			// API's limits): one request, an output item per image.
			return [await compressMany(this)];
		}
		let concurrency = 1;
		if (resource === 'image' && operation === 'compress') {
			const options = this.getNodeParameter('options', 0, {}) as IDataObject;
			concurrency = Math.max(1, Math.floor(Number(options.concurrency ?? 5)));
		}

		// Each item runs on its own (its own job, its own error); up to
		// concurrency run at once, and the output keeps the input order.
		const results: INodeExecutionData[][] = new Array(items.length);
		let next = 0;
		const worker = async () => {
			while (next < items.length) {
				const i = next++;
				try {
					results[i] = await runItem(this, resource, operation, i);
				} catch (error) {
					const failure = nodeError(this, error, i);
					if (!this.continueOnFail()) throw failure;
					const json: IDataObject = {
						error: failure.message,
						code: String(failure.context.code ?? 'node_error'),
					};
					if (failure.context.job_id) json.job_id = failure.context.job_id;
					results[i] = [{ json, pairedItem: { item: i } }];
				}
			}
		};
		await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
		return [results.flat()];
	}
}
