import type { IDataObject } from 'n8n-workflow';

import type { CatalogField, CatalogOperation } from './catalog';
import type { ApiRequest } from './request';
import { parseObject, trimBase } from './request';

// Compress Many as pure request building, apart from n8n's execution
// context so the unit tests (test/batch.test.js) and the live test
// (test/batch.live.test.js) check exactly what goes on the wire. In n8n each
// input item is one image: the node sends them as the catalog's list field
// (one record per item), as few batches as the API's limits allow.

/** One image of the list: the record's fields by the API's names. */
export type BatchRecord = IDataObject;

/** The catalog's list input of an operation (Compress Many's items). */
export function listField(op: CatalogOperation): CatalogField {
	const f = op.inputs.find((x) => x.type === 'list');
	if (!f || !f.fields) throw new Error(`catalog operation ${op.key} takes no list`);
	return f;
}

function isEmpty(v: unknown): boolean {
	return v === undefined || v === null || v === '';
}

/**
 * A record with the list's fields only, empty ones left out and object
 * fields parsed (metadata as JSON text or an object); a record without an
 * image source is refused, naming its item.
 */
export function batchRecord(op: CatalogOperation, values: IDataObject, itemIndex: number): BatchRecord {
	const out: BatchRecord = {};
	for (const f of listField(op).fields ?? []) {
		const v = values[f.key];
		if (isEmpty(v)) continue;
		out[f.key] = f.type === 'object' ? parseObject(`${f.label} (item ${itemIndex})`, v) : v;
	}
	if (isEmpty(out.image_url) && isEmpty(out.image_base64)) {
		throw new Error(`item ${itemIndex} has no image: give an Image URL, Image (Base64) or a binary file`);
	}
	return out;
}

/** The bytes a record adds to the JSON body. */
export function recordSize(r: BatchRecord): number {
	return Buffer.byteLength(JSON.stringify(r)) + 1;
}

/**
 * Packs records into batches the API takes, as they are read: at most
 * maxItems each and a JSON body of at most maxBytes (base64 images are
 * large), so that memory holds one request's images, not the whole input's.
 */
export class BatchPacker {
	private records: BatchRecord[] = [];
	private size = 0;

	constructor(
		private readonly maxItems: number,
		private readonly maxBytes: number,
	) {}

	/**
	 * Adds a record; answers the full batch to send first when the record
	 * does not fit beside it (else undefined). A record over maxBytes alone
	 * is refused: the API would refuse the body.
	 */
	add(r: BatchRecord, itemIndex: number): BatchRecord[] | undefined {
		const n = recordSize(r);
		if (n > this.maxBytes) {
			throw new Error(`item ${itemIndex} is ${n} bytes as JSON, over the ${this.maxBytes} one batch request takes`);
		}
		let full: BatchRecord[] | undefined;
		if (this.records.length > 0 && (this.records.length >= this.maxItems || this.size + n > this.maxBytes)) {
			full = this.take();
		}
		this.records.push(r);
		this.size += n;
		return full;
	}

	/** The records not sent yet, and empties the packer. */
	take(): BatchRecord[] {
		const out = this.records;
		this.records = [];
		this.size = 0;
		return out;
	}
}

/**
 * The request of one batch: the records as the list field, the operation's
 * other body fields (batch metadata) beside it, its fixed query (wait,
 * include=jobs) and wait as given.
 */
export function buildBatchRequest(
	op: CatalogOperation,
	baseUrl: string,
	records: BatchRecord[],
	values: IDataObject,
	wait: number,
): ApiRequest {
	const list = listField(op);
	const body: IDataObject = { [list.key]: records };
	for (const f of op.inputs) {
		if (f === list || f.in !== 'body' || isEmpty(values[f.key])) continue;
		body[f.key] = f.type === 'object' ? parseObject(f.label, values[f.key]) : values[f.key];
	}
	return {
		method: op.method,
		url: trimBase(baseUrl) + op.path,
		qs: { ...op.query, wait },
		headers: { 'Content-Type': 'application/json' },
		body,
	};
}

/** The Idempotency-Key of one batch of a node's run. */
export function batchIdempotencyKey(executionId: string, nodeId: string, chunk: number): string {
	return `n8n-${executionId}-${nodeId}-batch-${chunk}`;
}
