// imgflow for Zapier as a Zapier CLI app. Generated from catalog.Default()
// (definitions/zapier.go, zapiercli.go) by: imgflow definitions; do not edit.
// Deploy: npm install && zapier register "imgflow" && zapier push (README.md).
'use strict';

// The compressed file as Zapier's own file: a completed job's "file" output is a
// dehydrated pointer, and when a later step uses it Zapier runs this hydrator,
// which streams the bytes from GET /v1/jobs/{id}/file into Zapier's file store.
// The request carries the key as the X-API-Key header (requestTemplate), so no
// URL holds it, and it works for as long as imgflow keeps the result, even
// after the signed file_url has expired.
const hydrators = {
  compressedFile: async (z, bundle) => {
    const { id, filename, mime_type: mimeType, size } = bundle.inputData;
    const response = await z.request({
      method: 'GET',
      url: "https://imgflow.example.com/v1/jobs/" + encodeURIComponent(id) + "/file",
      raw: true,
      skipThrowForStatus: true,
    });
    if (response.status === 404) {
      throw new z.errors.Error(`The compressed file of job ${id} is no longer stored: compress the image again.`, 'FileExpired', 404);
    }
    return z.stashFile(response, Number(size) || undefined, filename, mimeType);
  },
};

// withFile adds the "file" output to a completed job; other jobs pass unchanged.
const withFile = (z, job) => {
  if (job && job.status === 'completed' && job.result) {
    job["file"] = z.dehydrateFile(hydrators.compressedFile, {
      id: job.id,
      filename: job.result.filename,
      mime_type: job.result.mime_type,
      size: job.result.compressed_size,
    });
  }
  return job;
};

module.exports = {
  "authentication": {
    "connectionLabel": "{{json.user_id}} ({{json.subscription_type}})",
    "fields": [
      {
        "helpText": "Your compression API key, from the dashboard (imgflow keys create in a local install). It is sent as the X-API-Key header.",
        "key": "api_key",
        "label": "API Key",
        "required": true,
        "type": "password",
      },
    ],
    "test": {
      "method": "GET",
      "url": "https://imgflow.example.com/v1/account",
    },
    "type": "custom",
  },
  "creates": {
    "check_account": {
      "display": {
        "description": "Returns the account's plan and remaining credits.",
        "label": "Check Account",
      },
      "key": "check_account",
      "noun": "Account",
      "operation": {
        "inputFields": [],
        "outputFields": [
          {
            "key": "valid",
            "label": "Valid",
            "sample": true,
            "type": "boolean",
          },
          {
            "key": "user_id",
            "label": "User ID",
            "primary": true,
            "sample": "user_7f3a9c",
            "type": "string",
          },
          {
            "key": "subscription_type",
            "label": "Plan",
            "sample": "Free",
            "type": "string",
          },
          {
            "key": "credits_remaining",
            "label": "Credits Remaining",
            "sample": 499,
            "type": "integer",
          },
          {
            "key": "max_image_size",
            "label": "Max Image Size (bytes)",
            "sample": 10485760,
            "type": "integer",
          },
          {
            "key": "webhook_secret",
            "label": "Webhook Secret",
            "sample": "whsec_MfKQ9r8GKYqXJjDzLh9nQWm2sV3c4PdX",
            "type": "string",
          },
        ],
        "perform": {
          "method": "GET",
          "url": "https://imgflow.example.com/v1/account",
        },
        "sample": {
          "credits_remaining": 499,
          "max_image_size": 10485760,
          "subscription_type": "Free",
          "user_id": "user_7f3a9c",
          "valid": true,
          "webhook_secret": "whsec_MfKQ9r8GKYqXJjDzLh9nQWm2sV3c4PdX",
        },
      },
    },
    "check_image": {
      "display": {
        "description": "Checks an image as Compress Image would and tells what compressing it would cost, without compressing or charging anything.",
        "label": "Check Image",
      },
      "key": "check_image",
      "noun": "Image",
      "operation": {
        "inputFields": [
          {
            "helpText": "Public URL of the PNG, JPEG, WebP or AVIF image to compress (up to 10 MiB). Give this or Image (Base64), not both. A file from an earlier step works: platforms pass files as URLs.",
            "key": "image_url",
            "label": "Image URL",
            "placeholder": "https://images.example.com/photos/team-offsite.jpg",
            "required": false,
            "type": "file",
          },
          {
            "helpText": "The image itself, base64-encoded; a data: URI is accepted too. Use it when the image has no URL. Give this or Image URL, not both.",
            "key": "image_base64",
            "label": "Image (Base64)",
            "placeholder": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            "required": false,
            "type": "text",
          },
          {
            "default": "true",
            "helpText": "When this key compressed the same image (same bytes, whatever its URL) before and its result is still stored, return that result as a new job at no credit (deduplicated_from names the earlier job). Set to false to compress and be charged again.",
            "key": "dedupe",
            "label": "Reuse Earlier Result",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "New size, in pixels: 1600x (1600 wide), x900 (900 high) or 400x400 (a box; see Resize Method). Never enlarges unless Enlarge is set. At most 16384 a side. Free: the job still costs one credit.",
            "key": "resize",
            "label": "Resize",
            "placeholder": "1600x",
            "required": false,
            "type": "string",
          },
          {
            "choices": [
              "scale",
              "fit",
              "cover",
            ],
            "helpText": "scale: one side given, proportions kept; fit: inside the box, proportions kept; cover: fills the box exactly, cropped around the most interesting part of the image. Defaults to scale for one side, fit for a box.",
            "key": "resize_method",
            "label": "Resize Method",
            "required": false,
            "type": "string",
          },
          {
            "default": "false",
            "helpText": "Allow the image to get bigger than it is. Off by default: a smaller image keeps its size.",
            "key": "resize_enlarge",
            "label": "Enlarge",
            "required": false,
            "type": "boolean",
          },
          {
            "choices": [
              "webp",
              "avif",
              "jpeg",
              "png",
            ],
            "helpText": "The result's format: webp or avif for the web, jpeg for email. Leave empty to keep the image's own format (HEIC photos become JPEG).",
            "key": "convert",
            "label": "Convert To",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Colour (#rrggbb) that fills transparency when the new format has none (JPEG). Defaults to white.",
            "key": "background",
            "label": "Background",
            "placeholder": "#ffffff",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Metadata to keep, comma-separated: copyright (copyright and artist), creation (date taken), location (GPS). By default the result carries none. Orientation is always applied to the pixels.",
            "key": "preserve",
            "label": "Keep Metadata",
            "placeholder": "copyright,creation",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Fit the result under this size, for the same one credit: 100KB (100,000 bytes), 1.5MB, 200KiB (204,800 bytes) or a number of bytes. Quality is lowered first, then the dimensions (see Allow Resize). A size the image cannot reach fails the job uncharged.",
            "key": "target_max_bytes",
            "label": "Max File Size",
            "placeholder": "100KB",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "With Max File Size: let the image get smaller in pixels when lower quality alone cannot fit it. Off: quality only, and an image that cannot fit fails uncharged.",
            "key": "target_allow_resize",
            "label": "Allow Resize to Fit",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "With Max File Size: the lowest SSIMULACRA2 score (0–100) the result may have against the image it encodes: 90 looks lossless, 70 is high quality for the web, 50 medium. The image gets smaller in pixels rather than worse (when Allow Resize is on); a size and score the image cannot reach together fail the job uncharged, with the best score reached.",
            "key": "target_min_score",
            "label": "Min Visual Quality",
            "placeholder": "70",
            "required": false,
            "type": "number",
          },
        ],
        "outputFields": [
          {
            "key": "would_charge",
            "label": "Would Charge (credits)",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "input__type",
            "label": "Image Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Image Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__width",
            "label": "Width (pixels)",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Height (pixels)",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "input__sha256",
            "label": "Image SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "output__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "output__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "output__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
        ],
        "perform": {
          "body": {
            "background": "{{bundle.inputData.background}}",
            "convert": "{{bundle.inputData.convert}}",
            "dedupe": "{{bundle.inputData.dedupe}}",
            "image_base64": "{{bundle.inputData.image_base64}}",
            "image_url": "{{bundle.inputData.image_url}}",
            "preserve": "{{bundle.inputData.preserve}}",
            "resize": "{{bundle.inputData.resize}}",
            "resize_enlarge": "{{bundle.inputData.resize_enlarge}}",
            "resize_method": "{{bundle.inputData.resize_method}}",
            "target_allow_resize": "{{bundle.inputData.target_allow_resize}}",
            "target_max_bytes": "{{bundle.inputData.target_max_bytes}}",
            "target_min_score": "{{bundle.inputData.target_min_score}}",
          },
          "method": "POST",
          "removeMissingValuesFrom": {
            "body": true,
            "params": false,
          },
          "url": "https://imgflow.example.com/v1/jobs/dry-run",
        },
        "sample": {
          "credits_remaining": 498,
          "deduplicated_from": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "height": 3024,
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "width": 4032,
          },
          "output": {
            "height": 1200,
            "type": "image/jpeg",
            "width": 1600,
          },
          "would_charge": 0,
        },
      },
    },
    "compress_image": {
      "display": {
        "description": "Compresses an image and returns the finished job with the compressed file's URL.",
        "label": "Compress Image",
      },
      "key": "compress_image",
      "noun": "Image",
      "operation": {
        "inputFields": [
          {
            "helpText": "Public URL of the PNG, JPEG, WebP or AVIF image to compress (up to 10 MiB). Give this or Image (Base64), not both. A file from an earlier step works: platforms pass files as URLs.",
            "key": "image_url",
            "label": "Image URL",
            "placeholder": "https://images.example.com/photos/team-offsite.jpg",
            "required": false,
            "type": "file",
          },
          {
            "helpText": "The image itself, base64-encoded; a data: URI is accepted too. Use it when the image has no URL. Give this or Image URL, not both.",
            "key": "image_base64",
            "label": "Image (Base64)",
            "placeholder": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            "required": false,
            "type": "text",
          },
          {
            "helpText": "Name for the compressed file, such as team-offsite.jpg. Defaults to the name in the URL.",
            "key": "filename",
            "label": "File Name",
            "placeholder": "team-offsite.jpg",
            "required": false,
            "type": "string",
          },
          {
            "dict": true,
            "helpText": "Your own key/value pairs (such as a record id), echoed back unchanged on the job so later steps can match it.",
            "key": "metadata",
            "label": "Metadata",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "When this key compressed the same image (same bytes, whatever its URL) before and its result is still stored, return that result as a new job at no credit (deduplicated_from names the earlier job). Set to false to compress and be charged again.",
            "key": "dedupe",
            "label": "Reuse Earlier Result",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "New size, in pixels: 1600x (1600 wide), x900 (900 high) or 400x400 (a box; see Resize Method). Never enlarges unless Enlarge is set. At most 16384 a side. Free: the job still costs one credit.",
            "key": "resize",
            "label": "Resize",
            "placeholder": "1600x",
            "required": false,
            "type": "string",
          },
          {
            "choices": [
              "scale",
              "fit",
              "cover",
            ],
            "helpText": "scale: one side given, proportions kept; fit: inside the box, proportions kept; cover: fills the box exactly, cropped around the most interesting part of the image. Defaults to scale for one side, fit for a box.",
            "key": "resize_method",
            "label": "Resize Method",
            "required": false,
            "type": "string",
          },
          {
            "default": "false",
            "helpText": "Allow the image to get bigger than it is. Off by default: a smaller image keeps its size.",
            "key": "resize_enlarge",
            "label": "Enlarge",
            "required": false,
            "type": "boolean",
          },
          {
            "choices": [
              "webp",
              "avif",
              "jpeg",
              "png",
            ],
            "helpText": "The result's format: webp or avif for the web, jpeg for email. Leave empty to keep the image's own format (HEIC photos become JPEG).",
            "key": "convert",
            "label": "Convert To",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Colour (#rrggbb) that fills transparency when the new format has none (JPEG). Defaults to white.",
            "key": "background",
            "label": "Background",
            "placeholder": "#ffffff",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Metadata to keep, comma-separated: copyright (copyright and artist), creation (date taken), location (GPS). By default the result carries none. Orientation is always applied to the pixels.",
            "key": "preserve",
            "label": "Keep Metadata",
            "placeholder": "copyright,creation",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Fit the result under this size, for the same one credit: 100KB (100,000 bytes), 1.5MB, 200KiB (204,800 bytes) or a number of bytes. Quality is lowered first, then the dimensions (see Allow Resize). A size the image cannot reach fails the job uncharged.",
            "key": "target_max_bytes",
            "label": "Max File Size",
            "placeholder": "100KB",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "With Max File Size: let the image get smaller in pixels when lower quality alone cannot fit it. Off: quality only, and an image that cannot fit fails uncharged.",
            "key": "target_allow_resize",
            "label": "Allow Resize to Fit",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "With Max File Size: the lowest SSIMULACRA2 score (0–100) the result may have against the image it encodes: 90 looks lossless, 70 is high quality for the web, 50 medium. The image gets smaller in pixels rather than worse (when Allow Resize is on); a size and score the image cannot reach together fail the job uncharged, with the best score reached.",
            "key": "target_min_score",
            "label": "Min Visual Quality",
            "placeholder": "70",
            "required": false,
            "type": "number",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "completed",
            "type": "string",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "updated_at",
            "label": "Updated At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "started_at",
            "label": "Started At",
            "sample": "2026-11-21T09:30:00.12Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "input__kind",
            "label": "Input Kind",
            "sample": "url",
            "type": "string",
          },
          {
            "key": "input__url",
            "label": "Input URL",
            "sample": "https://images.example.com/photos/team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__filename",
            "label": "Input File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Input Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__mime_type",
            "label": "Input MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__sha256",
            "label": "Input SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "type": "string",
          },
          {
            "key": "result__original_size",
            "label": "Original Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "result__compressed_size",
            "label": "Compressed Size (bytes)",
            "sample": 612880,
            "type": "integer",
          },
          {
            "key": "result__compression_ratio",
            "label": "Compression Ratio",
            "sample": 75.32,
            "type": "number",
          },
          {
            "key": "result__credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "result__mime_type",
            "label": "Result MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__filename",
            "label": "Result File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "result__file_url",
            "label": "Compressed File URL",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "type": "file",
          },
          {
            "key": "error__code",
            "label": "Error Code",
            "sample": "insufficient_credits",
            "type": "string",
          },
          {
            "key": "error__message",
            "label": "Error Message",
            "sample": "Insufficient credits",
            "type": "string",
          },
          {
            "key": "error__upstream_status",
            "label": "Upstream Status",
            "sample": 429,
            "type": "integer",
          },
          {
            "key": "error__retryable",
            "label": "Retryable",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "callback__status",
            "label": "Callback Status",
            "sample": "delivered",
            "type": "string",
          },
          {
            "key": "callback__attempts",
            "label": "Callback Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "attempts",
            "label": "Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "upstream_calls",
            "label": "Upstream Calls",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "charge_uncertain",
            "label": "Charge Uncertain",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "input__type",
            "label": "Input Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__width",
            "label": "Input Width",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Input Height",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "result__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "result__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
          {
            "key": "result__quality",
            "label": "Result Quality",
            "sample": 84,
            "type": "integer",
          },
          {
            "key": "result__score",
            "label": "Result Visual Quality",
            "sample": 78.42,
            "type": "number",
          },
          {
            "key": "file",
            "label": "Compressed File",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          const request = { method: "POST", url: "https://imgflow.example.com/v1/jobs?wait=25" };
          request.body = {};
          for (const key of ["image_url", "image_base64", "filename", "metadata", "dedupe", "resize", "resize_method", "resize_enlarge", "convert", "background", "preserve", "target_max_bytes", "target_allow_resize", "target_min_score"]) {
            const value = bundle.inputData[key];
            if (value !== undefined && value !== null && value !== '') request.body[key] = value;
          }
          const response = await z.request(request);
          return withFile(z, response.data);
        },
        "sample": {
          "attempts": 1,
          "callback": {
            "attempts": 1,
            "last_status": 200,
            "status": "delivered",
          },
          "charge_uncertain": false,
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:01.8Z",
          "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "filename": "team-offsite.jpg",
            "height": 3024,
            "kind": "url",
            "mime_type": "image/jpeg",
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "url": "https://images.example.com/photos/team-offsite.jpg",
            "width": 4032,
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "resize": {
            "method": "scale",
            "width": 1600,
          },
          "result": {
            "compressed_size": 612880,
            "compression_ratio": 75.32,
            "credits_remaining": 498,
            "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "filename": "team-offsite.jpg",
            "height": 1200,
            "mime_type": "image/jpeg",
            "original_size": 2483114,
            "quality": 84,
            "score": 78.42,
            "type": "image/jpeg",
            "width": 1600,
          },
          "started_at": "2026-11-21T09:30:00.12Z",
          "status": "completed",
          "target": {
            "max_bytes": 700000,
            "min_score": 75,
          },
          "updated_at": "2026-11-21T09:30:01.8Z",
          "upstream_calls": 1,
        },
      },
    },
    "compress_image_callback": {
      "display": {
        "description": "Compresses an image and pauses the flow until imgflow calls back with the finished job.",
        "label": "Compress Image with Callback",
      },
      "key": "compress_image_callback",
      "noun": "Image",
      "operation": {
        "inputFields": [
          {
            "helpText": "Public URL of the PNG, JPEG, WebP or AVIF image to compress (up to 10 MiB). Give this or Image (Base64), not both. A file from an earlier step works: platforms pass files as URLs.",
            "key": "image_url",
            "label": "Image URL",
            "placeholder": "https://images.example.com/photos/team-offsite.jpg",
            "required": false,
            "type": "file",
          },
          {
            "helpText": "The image itself, base64-encoded; a data: URI is accepted too. Use it when the image has no URL. Give this or Image URL, not both.",
            "key": "image_base64",
            "label": "Image (Base64)",
            "placeholder": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            "required": false,
            "type": "text",
          },
          {
            "helpText": "Name for the compressed file, such as team-offsite.jpg. Defaults to the name in the URL.",
            "key": "filename",
            "label": "File Name",
            "placeholder": "team-offsite.jpg",
            "required": false,
            "type": "string",
          },
          {
            "dict": true,
            "helpText": "Your own key/value pairs (such as a record id), echoed back unchanged on the job so later steps can match it.",
            "key": "metadata",
            "label": "Metadata",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "When this key compressed the same image (same bytes, whatever its URL) before and its result is still stored, return that result as a new job at no credit (deduplicated_from names the earlier job). Set to false to compress and be charged again.",
            "key": "dedupe",
            "label": "Reuse Earlier Result",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "New size, in pixels: 1600x (1600 wide), x900 (900 high) or 400x400 (a box; see Resize Method). Never enlarges unless Enlarge is set. At most 16384 a side. Free: the job still costs one credit.",
            "key": "resize",
            "label": "Resize",
            "placeholder": "1600x",
            "required": false,
            "type": "string",
          },
          {
            "choices": [
              "scale",
              "fit",
              "cover",
            ],
            "helpText": "scale: one side given, proportions kept; fit: inside the box, proportions kept; cover: fills the box exactly, cropped around the most interesting part of the image. Defaults to scale for one side, fit for a box.",
            "key": "resize_method",
            "label": "Resize Method",
            "required": false,
            "type": "string",
          },
          {
            "default": "false",
            "helpText": "Allow the image to get bigger than it is. Off by default: a smaller image keeps its size.",
            "key": "resize_enlarge",
            "label": "Enlarge",
            "required": false,
            "type": "boolean",
          },
          {
            "choices": [
              "webp",
              "avif",
              "jpeg",
              "png",
            ],
            "helpText": "The result's format: webp or avif for the web, jpeg for email. Leave empty to keep the image's own format (HEIC photos become JPEG).",
            "key": "convert",
            "label": "Convert To",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Colour (#rrggbb) that fills transparency when the new format has none (JPEG). Defaults to white.",
            "key": "background",
            "label": "Background",
            "placeholder": "#ffffff",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Metadata to keep, comma-separated: copyright (copyright and artist), creation (date taken), location (GPS). By default the result carries none. Orientation is always applied to the pixels.",
            "key": "preserve",
            "label": "Keep Metadata",
            "placeholder": "copyright,creation",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Fit the result under this size, for the same one credit: 100KB (100,000 bytes), 1.5MB, 200KiB (204,800 bytes) or a number of bytes. Quality is lowered first, then the dimensions (see Allow Resize). A size the image cannot reach fails the job uncharged.",
            "key": "target_max_bytes",
            "label": "Max File Size",
            "placeholder": "100KB",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "With Max File Size: let the image get smaller in pixels when lower quality alone cannot fit it. Off: quality only, and an image that cannot fit fails uncharged.",
            "key": "target_allow_resize",
            "label": "Allow Resize to Fit",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "With Max File Size: the lowest SSIMULACRA2 score (0–100) the result may have against the image it encodes: 90 looks lossless, 70 is high quality for the web, 50 medium. The image gets smaller in pixels rather than worse (when Allow Resize is on); a size and score the image cannot reach together fail the job uncharged, with the best score reached.",
            "key": "target_min_score",
            "label": "Min Visual Quality",
            "placeholder": "70",
            "required": false,
            "type": "number",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "completed",
            "type": "string",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "updated_at",
            "label": "Updated At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "started_at",
            "label": "Started At",
            "sample": "2026-11-21T09:30:00.12Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "input__kind",
            "label": "Input Kind",
            "sample": "url",
            "type": "string",
          },
          {
            "key": "input__url",
            "label": "Input URL",
            "sample": "https://images.example.com/photos/team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__filename",
            "label": "Input File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Input Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__mime_type",
            "label": "Input MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__sha256",
            "label": "Input SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "type": "string",
          },
          {
            "key": "result__original_size",
            "label": "Original Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "result__compressed_size",
            "label": "Compressed Size (bytes)",
            "sample": 612880,
            "type": "integer",
          },
          {
            "key": "result__compression_ratio",
            "label": "Compression Ratio",
            "sample": 75.32,
            "type": "number",
          },
          {
            "key": "result__credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "result__mime_type",
            "label": "Result MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__filename",
            "label": "Result File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "result__file_url",
            "label": "Compressed File URL",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "type": "file",
          },
          {
            "key": "error__code",
            "label": "Error Code",
            "sample": "insufficient_credits",
            "type": "string",
          },
          {
            "key": "error__message",
            "label": "Error Message",
            "sample": "Insufficient credits",
            "type": "string",
          },
          {
            "key": "error__upstream_status",
            "label": "Upstream Status",
            "sample": 429,
            "type": "integer",
          },
          {
            "key": "error__retryable",
            "label": "Retryable",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "callback__status",
            "label": "Callback Status",
            "sample": "delivered",
            "type": "string",
          },
          {
            "key": "callback__attempts",
            "label": "Callback Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "attempts",
            "label": "Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "upstream_calls",
            "label": "Upstream Calls",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "charge_uncertain",
            "label": "Charge Uncertain",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "input__type",
            "label": "Input Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__width",
            "label": "Input Width",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Input Height",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "result__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "result__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
          {
            "key": "result__quality",
            "label": "Result Quality",
            "sample": 84,
            "type": "integer",
          },
          {
            "key": "result__score",
            "label": "Result Visual Quality",
            "sample": 78.42,
            "type": "number",
          },
          {
            "key": "file",
            "label": "Compressed File",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          const body = { callback_url: z.generateCallbackUrl() };
          for (const key of ["image_url", "image_base64", "filename", "metadata", "dedupe", "resize", "resize_method", "resize_enlarge", "convert", "background", "preserve", "target_max_bytes", "target_allow_resize", "target_min_score"]) {
            const value = bundle.inputData[key];
            if (value !== undefined && value !== null && value !== '') body[key] = value;
          }
          const response = await z.request({ method: "POST", url: "https://imgflow.example.com/v1/jobs", body });
          return response.data;
        },
        "performResume": async function (z, bundle) {
          // imgflow POSTs {type, timestamp, data: job}; the finished job replaces the queued one.
          const delivery = bundle.cleanedRequest || {};
          return withFile(z, Object.assign({}, bundle.outputData, delivery.data || delivery));
        },
        "sample": {
          "attempts": 1,
          "callback": {
            "attempts": 1,
            "last_status": 200,
            "status": "delivered",
          },
          "charge_uncertain": false,
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:01.8Z",
          "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "filename": "team-offsite.jpg",
            "height": 3024,
            "kind": "url",
            "mime_type": "image/jpeg",
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "url": "https://images.example.com/photos/team-offsite.jpg",
            "width": 4032,
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "resize": {
            "method": "scale",
            "width": 1600,
          },
          "result": {
            "compressed_size": 612880,
            "compression_ratio": 75.32,
            "credits_remaining": 498,
            "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "filename": "team-offsite.jpg",
            "height": 1200,
            "mime_type": "image/jpeg",
            "original_size": 2483114,
            "quality": 84,
            "score": 78.42,
            "type": "image/jpeg",
            "width": 1600,
          },
          "started_at": "2026-11-21T09:30:00.12Z",
          "status": "completed",
          "target": {
            "max_bytes": 700000,
            "min_score": 75,
          },
          "updated_at": "2026-11-21T09:30:01.8Z",
          "upstream_calls": 1,
        },
      },
    },
    "compress_many": {
      "display": {
        "description": "Compresses a list of images as one batch and returns the batch with each image's job and compressed file URL.",
        "label": "Compress Many",
      },
      "key": "compress_many",
      "noun": "Batch",
      "operation": {
        "inputFields": [
          {
            "children": [
              {
                "helpText": "Public URL of the PNG, JPEG, WebP or AVIF image to compress (up to 10 MiB). Give this or Image (Base64), not both. A file from an earlier step works: platforms pass files as URLs. One per item.",
                "key": "items_image_url",
                "label": "Image URL",
                "placeholder": "https://images.example.com/photos/team-offsite.jpg",
                "required": false,
                "type": "string",
              },
              {
                "helpText": "The image itself, base64-encoded; a data: URI is accepted too. Use it when the image has no URL. Give this or Image URL, not both. One per item.",
                "key": "items_image_base64",
                "label": "Image (Base64)",
                "placeholder": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
                "required": false,
                "type": "text",
              },
              {
                "helpText": "Name for the compressed file, such as team-offsite.jpg. Defaults to the name in the URL.",
                "key": "items_filename",
                "label": "File Name",
                "placeholder": "team-offsite.jpg",
                "required": false,
                "type": "string",
              },
              {
                "helpText": "Your own key/value pairs for this image, echoed back on its job. As JSON text, such as {\"record_id\":\"rec_8812\"}.",
                "key": "items_metadata",
                "label": "Metadata",
                "required": false,
                "type": "string",
              },
            ],
            "key": "items",
            "label": "Images",
            "required": true,
          },
          {
            "dict": true,
            "helpText": "Your own key/value pairs for the whole batch (such as an import id), echoed back on the batch and its batch.finished event.",
            "key": "metadata",
            "label": "Batch Metadata",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "New size, in pixels: 1600x (1600 wide), x900 (900 high) or 400x400 (a box; see Resize Method). Never enlarges unless Enlarge is set. At most 16384 a side. Free: the job still costs one credit.",
            "key": "resize",
            "label": "Resize",
            "placeholder": "1600x",
            "required": false,
            "type": "string",
          },
          {
            "choices": [
              "scale",
              "fit",
              "cover",
            ],
            "helpText": "scale: one side given, proportions kept; fit: inside the box, proportions kept; cover: fills the box exactly, cropped around the most interesting part of the image. Defaults to scale for one side, fit for a box.",
            "key": "resize_method",
            "label": "Resize Method",
            "required": false,
            "type": "string",
          },
          {
            "default": "false",
            "helpText": "Allow the image to get bigger than it is. Off by default: a smaller image keeps its size.",
            "key": "resize_enlarge",
            "label": "Enlarge",
            "required": false,
            "type": "boolean",
          },
          {
            "choices": [
              "webp",
              "avif",
              "jpeg",
              "png",
            ],
            "helpText": "The result's format: webp or avif for the web, jpeg for email. Leave empty to keep the image's own format (HEIC photos become JPEG).",
            "key": "convert",
            "label": "Convert To",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Colour (#rrggbb) that fills transparency when the new format has none (JPEG). Defaults to white.",
            "key": "background",
            "label": "Background",
            "placeholder": "#ffffff",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Metadata to keep, comma-separated: copyright (copyright and artist), creation (date taken), location (GPS). By default the result carries none. Orientation is always applied to the pixels.",
            "key": "preserve",
            "label": "Keep Metadata",
            "placeholder": "copyright,creation",
            "required": false,
            "type": "string",
          },
          {
            "helpText": "Fit the result under this size, for the same one credit: 100KB (100,000 bytes), 1.5MB, 200KiB (204,800 bytes) or a number of bytes. Quality is lowered first, then the dimensions (see Allow Resize). A size the image cannot reach fails the job uncharged.",
            "key": "target_max_bytes",
            "label": "Max File Size",
            "placeholder": "100KB",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "With Max File Size: let the image get smaller in pixels when lower quality alone cannot fit it. Off: quality only, and an image that cannot fit fails uncharged.",
            "key": "target_allow_resize",
            "label": "Allow Resize to Fit",
            "required": false,
            "type": "boolean",
          },
          {
            "helpText": "With Max File Size: the lowest SSIMULACRA2 score (0–100) the result may have against the image it encodes: 90 looks lossless, 70 is high quality for the web, 50 medium. The image gets smaller in pixels rather than worse (when Allow Resize is on); a size and score the image cannot reach together fail the job uncharged, with the best score reached.",
            "key": "target_min_score",
            "label": "Min Visual Quality",
            "placeholder": "70",
            "required": false,
            "type": "number",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Batch ID",
            "primary": true,
            "sample": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "finished",
            "type": "string",
          },
          {
            "key": "counts__total",
            "label": "Items",
            "sample": 3,
            "type": "integer",
          },
          {
            "key": "counts__queued",
            "label": "Queued",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__processing",
            "label": "Processing",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__completed",
            "label": "Completed",
            "sample": 2,
            "type": "integer",
          },
          {
            "key": "counts__failed",
            "label": "Failed",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "saved_bytes",
            "label": "Saved Bytes",
            "sample": 3740468,
            "type": "integer",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:02.6Z",
            "type": "datetime",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "catalog": "spring-2027",
            },
          },
          {
            "key": "links__self",
            "label": "Batch URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
            "type": "string",
          },
          {
            "key": "links__jobs",
            "label": "Jobs URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/jobs",
            "type": "string",
          },
          {
            "key": "links__archive",
            "label": "Archive URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfYXJj",
            "type": "file",
          },
          {
            "children": [
              {
                "key": "index",
                "label": "Item Index",
                "type": "integer",
              },
              {
                "key": "batch_id",
                "label": "Batch ID",
                "type": "string",
              },
              {
                "key": "id",
                "label": "Job ID",
                "type": "string",
              },
              {
                "key": "status",
                "label": "Status",
                "type": "string",
              },
              {
                "key": "created_at",
                "label": "Created At",
                "type": "datetime",
              },
              {
                "key": "updated_at",
                "label": "Updated At",
                "type": "datetime",
              },
              {
                "key": "started_at",
                "label": "Started At",
                "type": "datetime",
              },
              {
                "key": "finished_at",
                "label": "Finished At",
                "type": "datetime",
              },
              {
                "key": "input__kind",
                "label": "Input Kind",
                "type": "string",
              },
              {
                "key": "input__url",
                "label": "Input URL",
                "type": "string",
              },
              {
                "key": "input__filename",
                "label": "Input File Name",
                "type": "string",
              },
              {
                "key": "input__size",
                "label": "Input Size (bytes)",
                "type": "integer",
              },
              {
                "key": "input__mime_type",
                "label": "Input MIME Type",
                "type": "string",
              },
              {
                "key": "input__sha256",
                "label": "Input SHA-256",
                "type": "string",
              },
              {
                "key": "deduplicated_from",
                "label": "Deduplicated From",
                "type": "string",
              },
              {
                "key": "result__original_size",
                "label": "Original Size (bytes)",
                "type": "integer",
              },
              {
                "key": "result__compressed_size",
                "label": "Compressed Size (bytes)",
                "type": "integer",
              },
              {
                "key": "result__compression_ratio",
                "label": "Compression Ratio",
                "type": "number",
              },
              {
                "key": "result__credits_remaining",
                "label": "Credits Remaining",
                "type": "integer",
              },
              {
                "key": "result__mime_type",
                "label": "Result MIME Type",
                "type": "string",
              },
              {
                "key": "result__filename",
                "label": "Result File Name",
                "type": "string",
              },
              {
                "key": "result__file_url",
                "label": "Compressed File URL",
                "type": "file",
              },
              {
                "key": "error__code",
                "label": "Error Code",
                "type": "string",
              },
              {
                "key": "error__message",
                "label": "Error Message",
                "type": "string",
              },
              {
                "key": "error__upstream_status",
                "label": "Upstream Status",
                "type": "integer",
              },
              {
                "key": "error__retryable",
                "label": "Retryable",
                "type": "boolean",
              },
              {
                "dict": true,
                "key": "metadata",
                "label": "Metadata",
              },
              {
                "key": "attempts",
                "label": "Attempts",
                "type": "integer",
              },
              {
                "key": "upstream_calls",
                "label": "Upstream Calls",
                "type": "integer",
              },
              {
                "key": "charge_uncertain",
                "label": "Charge Uncertain",
                "type": "boolean",
              },
              {
                "key": "input__type",
                "label": "Input Type",
                "type": "string",
              },
              {
                "key": "input__width",
                "label": "Input Width",
                "type": "integer",
              },
              {
                "key": "input__height",
                "label": "Input Height",
                "type": "integer",
              },
              {
                "key": "result__type",
                "label": "Result Type",
                "type": "string",
              },
              {
                "key": "result__width",
                "label": "Result Width",
                "type": "integer",
              },
              {
                "key": "result__height",
                "label": "Result Height",
                "type": "integer",
              },
              {
                "key": "result__quality",
                "label": "Result Quality",
                "type": "integer",
              },
              {
                "key": "result__score",
                "label": "Result Visual Quality",
                "type": "number",
              },
            ],
            "key": "jobs",
            "label": "Jobs",
          },
        ],
        "perform": async function (z, bundle) {
          const request = { method: "POST", url: "https://imgflow.example.com/v1/batches?include=jobs\u0026wait=25" };
          bundle.inputData["items"] = [].concat(bundle.inputData["items"] || []).map((record) => {
            const out = {};
            for (const [child, v] of Object.entries(record || {})) {
              const k = child.startsWith("items_") ? child.slice(6) : child;
              if (v === undefined || v === null || v === '') continue;
              if (!["metadata"].includes(k) || typeof v !== 'string') {
                out[k] = v;
                continue;
              }
              try {
                out[k] = JSON.parse(v);
              } catch (err) {
                throw new z.errors.Error("Images: " + k + ' must be a JSON object, such as {"record_id": "rec_1"}', 'invalid_input', 400);
              }
            }
            return out;
          }).filter((record) => Object.keys(record).length > 0);
          request.body = {};
          for (const key of ["items", "metadata", "resize", "resize_method", "resize_enlarge", "convert", "background", "preserve", "target_max_bytes", "target_allow_resize", "target_min_score"]) {
            const value = bundle.inputData[key];
            if (value !== undefined && value !== null && value !== '') request.body[key] = value;
          }
          const response = await z.request(request);
          return response.data;
        },
        "sample": {
          "counts": {
            "completed": 2,
            "failed": 1,
            "processing": 0,
            "queued": 0,
            "total": 3,
          },
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:02.6Z",
          "id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
          "jobs": [
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
              "index": 0,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 1600,
              },
              "result": {
                "compressed_size": 612880,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
                "filename": "team-offsite.jpg",
                "height": 1200,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 1600,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "target": {
                "max_bytes": 700000,
                "min_score": 75,
              },
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
            },
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T10:30:00Z",
              "deduplicated_from": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
              "finished_at": "2026-11-21T10:30:00.09Z",
              "id": "01937a61-2b3c-7d4e-8f50-6a7b8c9d0e1f",
              "index": 1,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 1600,
              },
              "result": {
                "compressed_size": 612880,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a61-2b3c-7d4e-8f50-6a7b8c9d0e1f/file?token=eyJleHAiOjE3OTM4NzgyMDB9.TmV3X3Rva2Vu",
                "filename": "team-offsite.jpg",
                "height": 1200,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 1600,
              },
              "started_at": "2026-11-21T10:30:00.04Z",
              "status": "completed",
              "target": {
                "max_bytes": 700000,
                "min_score": 75,
              },
              "updated_at": "2026-11-21T10:30:00.09Z",
              "upstream_calls": 0,
            },
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "error": {
                "code": "insufficient_credits",
                "credits_remaining": 0,
                "message": "Insufficient credits",
                "retryable": false,
                "upstream_status": 429,
              },
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a70-3c4e-7f60-9b72-8c9d0e1f2a3b",
              "index": 2,
              "input": {
                "filename": "banner.png",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/png",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/banner.png",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 1600,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "failed",
              "target": {
                "max_bytes": 700000,
                "min_score": 75,
              },
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
            },
          ],
          "links": {
            "archive": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfYXJj",
            "jobs": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/jobs",
            "self": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
          },
          "metadata": {
            "catalog": "spring-2027",
          },
          "saved_bytes": 3740468,
          "status": "finished",
        },
      },
    },
    "compress_variants": {
      "display": {
        "description": "Makes up to 10 sizes (and formats) of one image, each compressed, with a srcset and a <picture> snippet.",
        "label": "Make Image Sizes",
      },
      "key": "compress_variants",
      "noun": "Image",
      "operation": {
        "inputFields": [
          {
            "helpText": "URL of the PNG, JPEG, WebP or AVIF image (up to 10 MiB).",
            "key": "image_url",
            "label": "Image URL",
            "placeholder": "https://images.example.com/photos/team-offsite.jpg",
            "required": false,
            "type": "file",
          },
          {
            "helpText": "The image base64-encoded, when it has no URL.",
            "key": "image_base64",
            "label": "Image (Base64)",
            "placeholder": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            "required": false,
            "type": "text",
          },
          {
            "helpText": "Name the sizes' files are named after (photo.jpg: photo-sm.webp).",
            "key": "filename",
            "label": "File Name",
            "placeholder": "team-offsite.jpg",
            "required": false,
            "type": "string",
          },
          {
            "dict": true,
            "helpText": "Your own key/value pairs, echoed back on the set and each size.",
            "key": "metadata",
            "label": "Metadata",
            "required": false,
            "type": "string",
          },
          {
            "default": "true",
            "helpText": "false makes every size anew, even one this key made before.",
            "key": "dedupe",
            "label": "Reuse Earlier Result",
            "required": false,
            "type": "boolean",
          },
          {
            "children": [
              {
                "helpText": "Names the size in the results and its file (photo-sm.webp): a-z, 0-9, - and _.",
                "key": "variants_id",
                "label": "Variant ID",
                "placeholder": "sm",
                "required": false,
                "type": "string",
              },
              {
                "helpText": "320x (width), x480 (height) or 400x400 (a box).",
                "key": "variants_resize",
                "label": "Resize",
                "placeholder": "320x",
                "required": false,
                "type": "string",
              },
              {
                "choices": [
                  "webp",
                  "avif",
                  "jpeg",
                  "png",
                ],
                "helpText": "The size's format; empty keeps the image's own.",
                "key": "variants_convert",
                "label": "Convert To",
                "required": false,
                "type": "string",
              },
              {
                "helpText": "At most this many bytes: 100000, 100KB or 200KiB.",
                "key": "variants_target",
                "label": "Max Size",
                "placeholder": "100KB",
                "required": false,
                "type": "string",
              },
            ],
            "key": "variants",
            "label": "Sizes",
            "required": true,
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Set ID",
            "primary": true,
            "sample": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "finished",
            "type": "string",
          },
          {
            "key": "counts__total",
            "label": "Sizes",
            "sample": 3,
            "type": "integer",
          },
          {
            "key": "counts__queued",
            "label": "Queued",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__processing",
            "label": "Processing",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__completed",
            "label": "Completed",
            "sample": 3,
            "type": "integer",
          },
          {
            "key": "counts__failed",
            "label": "Failed",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "saved_bytes",
            "label": "Saved Bytes",
            "sample": 7175842,
            "type": "integer",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:03.1Z",
            "type": "datetime",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "links__self",
            "label": "Batch URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
            "type": "string",
          },
          {
            "key": "links__jobs",
            "label": "Jobs URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/jobs",
            "type": "string",
          },
          {
            "key": "links__archive",
            "label": "Archive URL",
            "sample": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.U2V0X2FyYw",
            "type": "file",
          },
          {
            "children": [
              {
                "key": "variant",
                "label": "Variant ID",
                "type": "string",
              },
              {
                "key": "index",
                "label": "Item Index",
                "type": "integer",
              },
              {
                "key": "batch_id",
                "label": "Batch ID",
                "type": "string",
              },
              {
                "key": "id",
                "label": "Job ID",
                "type": "string",
              },
              {
                "key": "status",
                "label": "Status",
                "type": "string",
              },
              {
                "key": "created_at",
                "label": "Created At",
                "type": "datetime",
              },
              {
                "key": "updated_at",
                "label": "Updated At",
                "type": "datetime",
              },
              {
                "key": "started_at",
                "label": "Started At",
                "type": "datetime",
              },
              {
                "key": "finished_at",
                "label": "Finished At",
                "type": "datetime",
              },
              {
                "key": "input__kind",
                "label": "Input Kind",
                "type": "string",
              },
              {
                "key": "input__url",
                "label": "Input URL",
                "type": "string",
              },
              {
                "key": "input__filename",
                "label": "Input File Name",
                "type": "string",
              },
              {
                "key": "input__size",
                "label": "Input Size (bytes)",
                "type": "integer",
              },
              {
                "key": "input__mime_type",
                "label": "Input MIME Type",
                "type": "string",
              },
              {
                "key": "input__sha256",
                "label": "Input SHA-256",
                "type": "string",
              },
              {
                "key": "deduplicated_from",
                "label": "Deduplicated From",
                "type": "string",
              },
              {
                "key": "result__original_size",
                "label": "Original Size (bytes)",
                "type": "integer",
              },
              {
                "key": "result__compressed_size",
                "label": "Compressed Size (bytes)",
                "type": "integer",
              },
              {
                "key": "result__compression_ratio",
                "label": "Compression Ratio",
                "type": "number",
              },
              {
                "key": "result__credits_remaining",
                "label": "Credits Remaining",
                "type": "integer",
              },
              {
                "key": "result__mime_type",
                "label": "Result MIME Type",
                "type": "string",
              },
              {
                "key": "result__filename",
                "label": "Result File Name",
                "type": "string",
              },
              {
                "key": "result__file_url",
                "label": "Compressed File URL",
                "type": "file",
              },
              {
                "key": "error__code",
                "label": "Error Code",
                "type": "string",
              },
              {
                "key": "error__message",
                "label": "Error Message",
                "type": "string",
              },
              {
                "key": "error__upstream_status",
                "label": "Upstream Status",
                "type": "integer",
              },
              {
                "key": "error__retryable",
                "label": "Retryable",
                "type": "boolean",
              },
              {
                "dict": true,
                "key": "metadata",
                "label": "Metadata",
              },
              {
                "key": "attempts",
                "label": "Attempts",
                "type": "integer",
              },
              {
                "key": "upstream_calls",
                "label": "Upstream Calls",
                "type": "integer",
              },
              {
                "key": "charge_uncertain",
                "label": "Charge Uncertain",
                "type": "boolean",
              },
              {
                "key": "input__type",
                "label": "Input Type",
                "type": "string",
              },
              {
                "key": "input__width",
                "label": "Input Width",
                "type": "integer",
              },
              {
                "key": "input__height",
                "label": "Input Height",
                "type": "integer",
              },
              {
                "key": "result__type",
                "label": "Result Type",
                "type": "string",
              },
              {
                "key": "result__width",
                "label": "Result Width",
                "type": "integer",
              },
              {
                "key": "result__height",
                "label": "Result Height",
                "type": "integer",
              },
              {
                "key": "result__quality",
                "label": "Result Quality",
                "type": "integer",
              },
              {
                "key": "result__score",
                "label": "Result Visual Quality",
                "type": "number",
              },
            ],
            "key": "jobs",
            "label": "Variants",
          },
          {
            "key": "srcset",
            "label": "Srcset",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 800w, https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 1600w",
            "type": "string",
          },
          {
            "key": "picture",
            "label": "Picture HTML",
            "sample": "<picture><source type=\"image/webp\" srcset=\"https://imgflow.example.com/v1/jobs/01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 320w\" sizes=\"100vw\"><img src=\"https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg\" srcset=\"https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 800w, https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 1600w\" sizes=\"100vw\" width=\"1600\" height=\"2400\" alt=\"\"></picture>",
            "type": "string",
          },
        ],
        "perform": async function (z, bundle) {
          const request = { method: "POST", url: "https://imgflow.example.com/v1/jobs/variants?include=jobs\u0026wait=25" };
          bundle.inputData["variants"] = [].concat(bundle.inputData["variants"] || []).map((record) => {
            const out = {};
            for (const [child, v] of Object.entries(record || {})) {
              const k = child.startsWith("variants_") ? child.slice(9) : child;
              if (v === undefined || v === null || v === '') continue;
              if (![].includes(k) || typeof v !== 'string') {
                out[k] = v;
                continue;
              }
              try {
                out[k] = JSON.parse(v);
              } catch (err) {
                throw new z.errors.Error("Sizes: " + k + ' must be a JSON object, such as {"record_id": "rec_1"}', 'invalid_input', 400);
              }
            }
            return out;
          }).filter((record) => Object.keys(record).length > 0);
          request.body = {};
          for (const key of ["image_url", "image_base64", "filename", "metadata", "dedupe", "variants"]) {
            const value = bundle.inputData[key];
            if (value !== undefined && value !== null && value !== '') request.body[key] = value;
          }
          const response = await z.request(request);
          return response.data;
        },
        "sample": {
          "counts": {
            "completed": 3,
            "failed": 0,
            "processing": 0,
            "queued": 0,
            "total": 3,
          },
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:03.1Z",
          "id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
          "jobs": [
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f",
              "index": 0,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 320,
              },
              "result": {
                "compressed_size": 14210,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-sm.webp",
                "height": 480,
                "mime_type": "image/webp",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/webp",
                "width": 320,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "sm",
            },
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f",
              "index": 1,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 800,
              },
              "result": {
                "compressed_size": 61890,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-md.jpg",
                "height": 1200,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 800,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "md",
            },
            {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f",
              "index": 2,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 1600,
              },
              "result": {
                "compressed_size": 197400,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-lg.jpg",
                "height": 2400,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 1600,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "lg",
            },
          ],
          "links": {
            "archive": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.U2V0X2FyYw",
            "jobs": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a/jobs",
            "self": "https://imgflow.example.com/v1/batches/01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "picture": "<picture><source type=\"image/webp\" srcset=\"https://imgflow.example.com/v1/jobs/01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 320w\" sizes=\"100vw\"><img src=\"https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg\" srcset=\"https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 800w, https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 1600w\" sizes=\"100vw\" width=\"1600\" height=\"2400\" alt=\"\"></picture>",
          "saved_bytes": 7175842,
          "srcset": "https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 800w, https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg 1600w",
          "status": "finished",
          "variants": {
            "lg": {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f",
              "index": 2,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 1600,
              },
              "result": {
                "compressed_size": 197400,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c32-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-lg.jpg",
                "height": 2400,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 1600,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "lg",
            },
            "md": {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f",
              "index": 1,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 800,
              },
              "result": {
                "compressed_size": 61890,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c31-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-md.jpg",
                "height": 1200,
                "mime_type": "image/jpeg",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/jpeg",
                "width": 800,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "md",
            },
            "sm": {
              "attempts": 1,
              "batch_id": "01937a70-3c4d-7e5f-8a61-7b8c9d0e1f2a",
              "charge_uncertain": false,
              "created_at": "2026-11-21T09:30:00Z",
              "finished_at": "2026-11-21T09:30:01.8Z",
              "id": "01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f",
              "index": 0,
              "input": {
                "filename": "team-offsite.jpg",
                "height": 3024,
                "kind": "url",
                "mime_type": "image/jpeg",
                "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
                "size": 2483114,
                "type": "image/jpeg",
                "url": "https://images.example.com/photos/team-offsite.jpg",
                "width": 4032,
              },
              "metadata": {
                "record_id": "rec_8812",
              },
              "resize": {
                "method": "scale",
                "width": 320,
              },
              "result": {
                "compressed_size": 14210,
                "compression_ratio": 75.32,
                "credits_remaining": 498,
                "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c30-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg",
                "filename": "team-offsite-sm.webp",
                "height": 480,
                "mime_type": "image/webp",
                "original_size": 2483114,
                "quality": 84,
                "score": 78.42,
                "type": "image/webp",
                "width": 320,
              },
              "started_at": "2026-11-21T09:30:00.12Z",
              "status": "completed",
              "updated_at": "2026-11-21T09:30:01.8Z",
              "upstream_calls": 1,
              "variant": "sm",
            },
          },
        },
      },
    },
    "get_job": {
      "display": {
        "description": "Finds a compress job by its id and returns its status and result.",
        "label": "Get Job",
      },
      "key": "get_job",
      "noun": "Job",
      "operation": {
        "inputFields": [
          {
            "helpText": "The id of a job, as returned by Compress Image or a trigger.",
            "key": "id",
            "label": "Job ID",
            "placeholder": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "required": true,
            "type": "string",
          },
          {
            "choices": [
              "data",
            ],
            "helpText": "Choose data to add result.compressed_data, the compressed image as base64 (large). Leave empty to get the file URL only.",
            "key": "include",
            "label": "Include Compressed Data",
            "required": false,
            "type": "string",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "completed",
            "type": "string",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "updated_at",
            "label": "Updated At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "started_at",
            "label": "Started At",
            "sample": "2026-11-21T09:30:00.12Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "input__kind",
            "label": "Input Kind",
            "sample": "url",
            "type": "string",
          },
          {
            "key": "input__url",
            "label": "Input URL",
            "sample": "https://images.example.com/photos/team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__filename",
            "label": "Input File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Input Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__mime_type",
            "label": "Input MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__sha256",
            "label": "Input SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "type": "string",
          },
          {
            "key": "result__original_size",
            "label": "Original Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "result__compressed_size",
            "label": "Compressed Size (bytes)",
            "sample": 612880,
            "type": "integer",
          },
          {
            "key": "result__compression_ratio",
            "label": "Compression Ratio",
            "sample": 75.32,
            "type": "number",
          },
          {
            "key": "result__credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "result__mime_type",
            "label": "Result MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__filename",
            "label": "Result File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "result__file_url",
            "label": "Compressed File URL",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "type": "file",
          },
          {
            "key": "error__code",
            "label": "Error Code",
            "sample": "insufficient_credits",
            "type": "string",
          },
          {
            "key": "error__message",
            "label": "Error Message",
            "sample": "Insufficient credits",
            "type": "string",
          },
          {
            "key": "error__upstream_status",
            "label": "Upstream Status",
            "sample": 429,
            "type": "integer",
          },
          {
            "key": "error__retryable",
            "label": "Retryable",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "callback__status",
            "label": "Callback Status",
            "sample": "delivered",
            "type": "string",
          },
          {
            "key": "callback__attempts",
            "label": "Callback Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "attempts",
            "label": "Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "upstream_calls",
            "label": "Upstream Calls",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "charge_uncertain",
            "label": "Charge Uncertain",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "input__type",
            "label": "Input Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__width",
            "label": "Input Width",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Input Height",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "result__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "result__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
          {
            "key": "result__quality",
            "label": "Result Quality",
            "sample": 84,
            "type": "integer",
          },
          {
            "key": "result__score",
            "label": "Result Visual Quality",
            "sample": 78.42,
            "type": "number",
          },
          {
            "key": "file",
            "label": "Compressed File",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          const request = { method: "GET", url: "https://imgflow.example.com/v1/jobs/{id}".replace("{id}", encodeURIComponent(bundle.inputData["id"])) };
          request.params = {};
          for (const key of ["include"]) {
            const value = bundle.inputData[key];
            if (value !== undefined && value !== null && value !== '') request.params[key] = value;
          }
          const response = await z.request(request);
          return withFile(z, response.data);
        },
        "sample": {
          "attempts": 1,
          "callback": {
            "attempts": 1,
            "last_status": 200,
            "status": "delivered",
          },
          "charge_uncertain": false,
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:01.8Z",
          "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "filename": "team-offsite.jpg",
            "height": 3024,
            "kind": "url",
            "mime_type": "image/jpeg",
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "url": "https://images.example.com/photos/team-offsite.jpg",
            "width": 4032,
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "resize": {
            "method": "scale",
            "width": 1600,
          },
          "result": {
            "compressed_size": 612880,
            "compression_ratio": 75.32,
            "credits_remaining": 498,
            "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "filename": "team-offsite.jpg",
            "height": 1200,
            "mime_type": "image/jpeg",
            "original_size": 2483114,
            "quality": 84,
            "score": 78.42,
            "type": "image/jpeg",
            "width": 1600,
          },
          "started_at": "2026-11-21T09:30:00.12Z",
          "status": "completed",
          "target": {
            "max_bytes": 700000,
            "min_score": 75,
          },
          "updated_at": "2026-11-21T09:30:01.8Z",
          "upstream_calls": 1,
        },
      },
    },
  },
  "hydrators": hydrators,
  "platformVersion": "19.1.0",
  "requestTemplate": {
    "headers": {
      "X-API-Key": "{{bundle.authData.api_key}}",
    },
  },
  "triggers": {
    "batch_finished": {
      "display": {
        "description": "Starts the flow once when every image of a batch of this key has completed or failed.",
        "label": "Batch Finished",
      },
      "key": "batch_finished",
      "noun": "Batch",
      "operation": {
        "inputFields": [],
        "outputFields": [
          {
            "key": "id",
            "label": "Batch ID",
            "primary": true,
            "sample": "01937a66-4d5e-7f60-8a71-9b0c1d2e3f40",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "finished",
            "type": "string",
          },
          {
            "key": "counts__total",
            "label": "Total Items",
            "sample": 12,
            "type": "integer",
          },
          {
            "key": "counts__queued",
            "label": "Queued Items",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__processing",
            "label": "Processing Items",
            "sample": 0,
            "type": "integer",
          },
          {
            "key": "counts__completed",
            "label": "Completed Items",
            "sample": 11,
            "type": "integer",
          },
          {
            "key": "counts__failed",
            "label": "Failed Items",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "saved_bytes",
            "label": "Saved Bytes",
            "sample": 18734502,
            "type": "integer",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:14.2Z",
            "type": "datetime",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "catalogue": "spring-2027",
            },
          },
          {
            "key": "links__self",
            "label": "Batch URL",
            "sample": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40",
            "type": "string",
          },
          {
            "key": "links__jobs",
            "label": "Jobs URL",
            "sample": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40/jobs",
            "type": "string",
          },
          {
            "key": "links__archive",
            "label": "Archive URL",
            "sample": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfZ3Vlc3M",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          // A delivery is {type, timestamp, data}.
          const delivery = bundle.cleanedRequest || {};
          return [delivery.data || delivery];
        },
        "performList": async function (z, bundle) {
          const response = await z.request({ method: 'GET', url: "https://imgflow.example.com/v1/batches", params: { limit: 100 } });
          const batches = (response.data && response.data.batches) || [];
          return batches.filter((batch) => batch.status === "finished");
        },
        "performSubscribe": {
          "body": {
            "event": "batch.finished",
            "target_url": "{{bundle.targetUrl}}",
          },
          "method": "POST",
          "url": "https://imgflow.example.com/v1/hooks",
        },
        "performUnsubscribe": async function (z, bundle) {
          const id = bundle.subscribeData && bundle.subscribeData.id;
          await z.request({ method: 'DELETE', url: "https://imgflow.example.com/v1/hooks/" + encodeURIComponent(id) });
          return { id, deleted: true };
        },
        "sample": {
          "counts": {
            "completed": 11,
            "failed": 1,
            "processing": 0,
            "queued": 0,
            "total": 12,
          },
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:14.2Z",
          "id": "01937a66-4d5e-7f60-8a71-9b0c1d2e3f40",
          "links": {
            "archive": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.QmF0Y2hfZ3Vlc3M",
            "jobs": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40/jobs",
            "self": "https://imgflow.example.net/v1/batches/01937a66-4d5e-7f60-8a71-9b0c1d2e3f40",
          },
          "metadata": {
            "catalogue": "spring-2027",
          },
          "saved_bytes": 18734502,
          "status": "finished",
        },
        "type": "hook",
      },
    },
    "credits_low": {
      "display": {
        "description": "Starts the flow when a job takes the account's credits to or below a threshold.",
        "label": "Credits Low",
      },
      "key": "credits_low",
      "noun": "Account",
      "operation": {
        "inputFields": [
          {
            "default": "50",
            "helpText": "The balance at or below which the flow starts (default 50).",
            "key": "threshold",
            "label": "Threshold",
            "placeholder": "100",
            "required": false,
            "type": "integer",
          },
        ],
        "outputFields": [
          {
            "key": "credits_remaining",
            "label": "Credits Remaining",
            "sample": 48,
            "type": "integer",
          },
          {
            "key": "threshold",
            "label": "Threshold",
            "sample": 50,
            "type": "integer",
          },
          {
            "key": "job_id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
        ],
        "perform": async function (z, bundle) {
          // A delivery is {type, timestamp, data}.
          const delivery = bundle.cleanedRequest || {};
          return [delivery.data || delivery];
        },
        "performList": async function (z, bundle) {
          const response = await z.request({ method: 'GET', url: "https://imgflow.example.com/v1/account" });
          const threshold = Number(bundle.inputData.threshold || 50);
          return [{ credits_remaining: response.data.credits_remaining, threshold, job_id: null }];
        },
        "performSubscribe": {
          "body": {
            "event": "account.credits_low",
            "target_url": "{{bundle.targetUrl}}",
            "threshold": "{{bundle.inputData.threshold}}",
          },
          "method": "POST",
          "removeMissingValuesFrom": {
            "body": true,
          },
          "url": "https://imgflow.example.com/v1/hooks",
        },
        "performUnsubscribe": async function (z, bundle) {
          const id = bundle.subscribeData && bundle.subscribeData.id;
          await z.request({ method: 'DELETE', url: "https://imgflow.example.com/v1/hooks/" + encodeURIComponent(id) });
          return { id, deleted: true };
        },
        "sample": {
          "credits_remaining": 48,
          "job_id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "threshold": 50,
        },
        "type": "hook",
      },
    },
    "job_finished": {
      "display": {
        "description": "Starts the flow at once when a compress job of this key completes or fails.",
        "label": "Job Finished",
      },
      "key": "job_finished",
      "noun": "Job",
      "operation": {
        "inputFields": [
          {
            "choices": [
              "job.finished",
              "job.completed",
              "job.failed",
            ],
            "default": "job.finished",
            "helpText": "Which finished jobs start the flow: job.finished (both), job.completed or job.failed.",
            "key": "event",
            "label": "Event",
            "required": true,
            "type": "string",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "completed",
            "type": "string",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "updated_at",
            "label": "Updated At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "started_at",
            "label": "Started At",
            "sample": "2026-11-21T09:30:00.12Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "input__kind",
            "label": "Input Kind",
            "sample": "url",
            "type": "string",
          },
          {
            "key": "input__url",
            "label": "Input URL",
            "sample": "https://images.example.com/photos/team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__filename",
            "label": "Input File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Input Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__mime_type",
            "label": "Input MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__sha256",
            "label": "Input SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "type": "string",
          },
          {
            "key": "result__original_size",
            "label": "Original Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "result__compressed_size",
            "label": "Compressed Size (bytes)",
            "sample": 612880,
            "type": "integer",
          },
          {
            "key": "result__compression_ratio",
            "label": "Compression Ratio",
            "sample": 75.32,
            "type": "number",
          },
          {
            "key": "result__credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "result__mime_type",
            "label": "Result MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__filename",
            "label": "Result File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "result__file_url",
            "label": "Compressed File URL",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "type": "file",
          },
          {
            "key": "error__code",
            "label": "Error Code",
            "sample": "insufficient_credits",
            "type": "string",
          },
          {
            "key": "error__message",
            "label": "Error Message",
            "sample": "Insufficient credits",
            "type": "string",
          },
          {
            "key": "error__upstream_status",
            "label": "Upstream Status",
            "sample": 429,
            "type": "integer",
          },
          {
            "key": "error__retryable",
            "label": "Retryable",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "callback__status",
            "label": "Callback Status",
            "sample": "delivered",
            "type": "string",
          },
          {
            "key": "callback__attempts",
            "label": "Callback Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "attempts",
            "label": "Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "upstream_calls",
            "label": "Upstream Calls",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "charge_uncertain",
            "label": "Charge Uncertain",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "input__type",
            "label": "Input Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__width",
            "label": "Input Width",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Input Height",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "result__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "result__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
          {
            "key": "result__quality",
            "label": "Result Quality",
            "sample": 84,
            "type": "integer",
          },
          {
            "key": "result__score",
            "label": "Result Visual Quality",
            "sample": 78.42,
            "type": "number",
          },
          {
            "key": "file",
            "label": "Compressed File",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          // A delivery is {type, timestamp, data}.
          const delivery = bundle.cleanedRequest || {};
          return [withFile(z, delivery.data || delivery)];
        },
        "performList": async function (z, bundle) {
          const status = { 'job.completed': 'completed', 'job.failed': 'failed' }[bundle.inputData.event] || '';
          const params = { limit: 100 };
          if (status) params.status = status;
          const response = await z.request({ method: 'GET', url: "https://imgflow.example.com/v1/jobs", params });
          const jobs = (response.data && response.data.jobs) || [];
          return jobs.filter((job) => job.status === 'completed' || job.status === 'failed').map((job) => withFile(z, job));
        },
        "performSubscribe": {
          "body": {
            "event": "{{bundle.inputData.event}}",
            "target_url": "{{bundle.targetUrl}}",
          },
          "method": "POST",
          "url": "https://imgflow.example.com/v1/hooks",
        },
        "performUnsubscribe": async function (z, bundle) {
          const id = bundle.subscribeData && bundle.subscribeData.id;
          await z.request({ method: 'DELETE', url: "https://imgflow.example.com/v1/hooks/" + encodeURIComponent(id) });
          return { id, deleted: true };
        },
        "sample": {
          "attempts": 1,
          "callback": {
            "attempts": 1,
            "last_status": 200,
            "status": "delivered",
          },
          "charge_uncertain": false,
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:01.8Z",
          "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "filename": "team-offsite.jpg",
            "height": 3024,
            "kind": "url",
            "mime_type": "image/jpeg",
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "url": "https://images.example.com/photos/team-offsite.jpg",
            "width": 4032,
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "resize": {
            "method": "scale",
            "width": 1600,
          },
          "result": {
            "compressed_size": 612880,
            "compression_ratio": 75.32,
            "credits_remaining": 498,
            "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "filename": "team-offsite.jpg",
            "height": 1200,
            "mime_type": "image/jpeg",
            "original_size": 2483114,
            "quality": 84,
            "score": 78.42,
            "type": "image/jpeg",
            "width": 1600,
          },
          "started_at": "2026-11-21T09:30:00.12Z",
          "status": "completed",
          "target": {
            "max_bytes": 700000,
            "min_score": 75,
          },
          "updated_at": "2026-11-21T09:30:01.8Z",
          "upstream_calls": 1,
        },
        "type": "hook",
      },
    },
    "job_finished_polling": {
      "display": {
        "description": "Checks every few minutes for compress jobs of this key that completed or failed.",
        "label": "Job Finished (Polling)",
      },
      "key": "job_finished_polling",
      "noun": "Job",
      "operation": {
        "inputFields": [
          {
            "choices": [
              "completed",
              "failed",
            ],
            "helpText": "Only jobs that completed, or only jobs that failed. Leave empty for every finished job.",
            "key": "status",
            "label": "Status",
            "required": false,
            "type": "string",
          },
        ],
        "outputFields": [
          {
            "key": "id",
            "label": "Job ID",
            "primary": true,
            "sample": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
            "type": "string",
          },
          {
            "key": "status",
            "label": "Status",
            "sample": "completed",
            "type": "string",
          },
          {
            "key": "created_at",
            "label": "Created At",
            "sample": "2026-11-21T09:30:00Z",
            "type": "datetime",
          },
          {
            "key": "updated_at",
            "label": "Updated At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "started_at",
            "label": "Started At",
            "sample": "2026-11-21T09:30:00.12Z",
            "type": "datetime",
          },
          {
            "key": "finished_at",
            "label": "Finished At",
            "sample": "2026-11-21T09:30:01.8Z",
            "type": "datetime",
          },
          {
            "key": "input__kind",
            "label": "Input Kind",
            "sample": "url",
            "type": "string",
          },
          {
            "key": "input__url",
            "label": "Input URL",
            "sample": "https://images.example.com/photos/team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__filename",
            "label": "Input File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "input__size",
            "label": "Input Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "input__mime_type",
            "label": "Input MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__sha256",
            "label": "Input SHA-256",
            "sample": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "type": "string",
          },
          {
            "key": "deduplicated_from",
            "label": "Deduplicated From",
            "type": "string",
          },
          {
            "key": "result__original_size",
            "label": "Original Size (bytes)",
            "sample": 2483114,
            "type": "integer",
          },
          {
            "key": "result__compressed_size",
            "label": "Compressed Size (bytes)",
            "sample": 612880,
            "type": "integer",
          },
          {
            "key": "result__compression_ratio",
            "label": "Compression Ratio",
            "sample": 75.32,
            "type": "number",
          },
          {
            "key": "result__credits_remaining",
            "label": "Credits Remaining",
            "sample": 498,
            "type": "integer",
          },
          {
            "key": "result__mime_type",
            "label": "Result MIME Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__filename",
            "label": "Result File Name",
            "sample": "team-offsite.jpg",
            "type": "string",
          },
          {
            "key": "result__file_url",
            "label": "Compressed File URL",
            "sample": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "type": "file",
          },
          {
            "key": "error__code",
            "label": "Error Code",
            "sample": "insufficient_credits",
            "type": "string",
          },
          {
            "key": "error__message",
            "label": "Error Message",
            "sample": "Insufficient credits",
            "type": "string",
          },
          {
            "key": "error__upstream_status",
            "label": "Upstream Status",
            "sample": 429,
            "type": "integer",
          },
          {
            "key": "error__retryable",
            "label": "Retryable",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "callback__status",
            "label": "Callback Status",
            "sample": "delivered",
            "type": "string",
          },
          {
            "key": "callback__attempts",
            "label": "Callback Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "dict": true,
            "key": "metadata",
            "label": "Metadata",
            "sample": {
              "record_id": "rec_8812",
            },
          },
          {
            "key": "attempts",
            "label": "Attempts",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "upstream_calls",
            "label": "Upstream Calls",
            "sample": 1,
            "type": "integer",
          },
          {
            "key": "charge_uncertain",
            "label": "Charge Uncertain",
            "sample": false,
            "type": "boolean",
          },
          {
            "key": "input__type",
            "label": "Input Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "input__width",
            "label": "Input Width",
            "sample": 4032,
            "type": "integer",
          },
          {
            "key": "input__height",
            "label": "Input Height",
            "sample": 3024,
            "type": "integer",
          },
          {
            "key": "result__type",
            "label": "Result Type",
            "sample": "image/jpeg",
            "type": "string",
          },
          {
            "key": "result__width",
            "label": "Result Width",
            "sample": 1600,
            "type": "integer",
          },
          {
            "key": "result__height",
            "label": "Result Height",
            "sample": 1200,
            "type": "integer",
          },
          {
            "key": "result__quality",
            "label": "Result Quality",
            "sample": 84,
            "type": "integer",
          },
          {
            "key": "result__score",
            "label": "Result Visual Quality",
            "sample": 78.42,
            "type": "number",
          },
          {
            "key": "file",
            "label": "Compressed File",
            "type": "file",
          },
        ],
        "perform": async function (z, bundle) {
          const status = bundle.inputData.status;
          const params = { limit: 100 };
          if (status) params.status = status;
          const response = await z.request({ method: 'GET', url: "https://imgflow.example.com/v1/jobs", params });
          const jobs = (response.data && response.data.jobs) || [];
          return jobs.filter((job) => job.status === 'completed' || job.status === 'failed').map((job) => withFile(z, job));
        },
        "sample": {
          "attempts": 1,
          "callback": {
            "attempts": 1,
            "last_status": 200,
            "status": "delivered",
          },
          "charge_uncertain": false,
          "created_at": "2026-11-21T09:30:00Z",
          "finished_at": "2026-11-21T09:30:01.8Z",
          "id": "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
          "input": {
            "filename": "team-offsite.jpg",
            "height": 3024,
            "kind": "url",
            "mime_type": "image/jpeg",
            "sha256": "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
            "size": 2483114,
            "type": "image/jpeg",
            "url": "https://images.example.com/photos/team-offsite.jpg",
            "width": 4032,
          },
          "metadata": {
            "record_id": "rec_8812",
          },
          "resize": {
            "method": "scale",
            "width": 1600,
          },
          "result": {
            "compressed_size": 612880,
            "compression_ratio": 75.32,
            "credits_remaining": 498,
            "file_url": "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M",
            "filename": "team-offsite.jpg",
            "height": 1200,
            "mime_type": "image/jpeg",
            "original_size": 2483114,
            "quality": 84,
            "score": 78.42,
            "type": "image/jpeg",
            "width": 1600,
          },
          "started_at": "2026-11-21T09:30:00.12Z",
          "status": "completed",
          "target": {
            "max_bytes": 700000,
            "min_score": 75,
          },
          "updated_at": "2026-11-21T09:30:01.8Z",
          "upstream_calls": 1,
        },
        "type": "polling",
      },
    },
  },
  "version": "1.0.0",
};
