package definitions

import (
	"fmt"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// n8nCompressManyFlow is the template of Compress Many with built-in nodes:
// every incoming item is one image (a binary file, or json.image_url); a
// Code node gathers them into the action's list, one HTTP Request sends the
// batch and waits, and a Code node turns its jobs back into an item per
// image, each downloaded as a file.
func n8nCompressManyFlow(c *catalog.Catalog, base, setupCred string) *n8nFlow {
	many := c.Operation("compress_many")
	var list catalog.Field
	for _, f := range many.Inputs {
		if f.Type == catalog.FieldList {
			list = f
		}
	}
	flow := newN8nFlow("imgflow: " + many.Label + " (files in, a file per image out)")
	flow.note(fmt.Sprintf("## %s\n%s\n\n1. %s\n2. **Read Images** reads the files to compress (any node whose items carry a binary field `data` works; items with `image_url` in their JSON work too).\n3. Run it: **Images to Batch** gathers every item into one request (at most %d images, about 24 MiB of files), **%s** sends them as one batch and waits up to %d s, **One Item per Image** gives an item per image in input order, and **Download** returns each compressed file as binary `data`. A failed image (or a batch still running after the wait) stops the workflow with its error code and job id.\n\nCan install community nodes? The **n8n-nodes-imgflow** node's Image > Compress Many does this in one node, past any number of images.",
		many.Label, many.Description, setupCred, connector.MaxBatchItems, many.Label, catalog.DefaultWait), 0)
	flow.add(n8nNode("Start", "n8n-nodes-base.manualTrigger", n8nManualVersion, 0, 0, obj{}))
	read := n8nReadFile("Read Images", 1)
	read["parameters"].(obj)["fileSelector"] = "/home/node/.n8n-files/*.{jpg,jpeg,png,webp,avif}"
	flow.add(read)
	flow.add(n8nNode("Images to Batch", "n8n-nodes-base.code", n8nCodeVersion, 2, 0, obj{
		"mode":     "runOnceForAllItems",
		"language": "javaScript",
		"jsCode":   fmt.Sprintf(n8nImagesToBatchCode, list.Key, connector.MaxBatchItems),
	}))
	post := n8nNode(many.Label, "n8n-nodes-base.httpRequest", n8nHTTPVersion, 3, 0, obj{
		"method":          many.Method,
		"url":             base + withQuery(many.Path, many.Query),
		"authentication":  "genericCredentialType",
		"genericAuthType": "httpHeaderAuth",
		"sendBody":        true,
		"specifyBody":     "json",
		"jsonBody":        "={{ JSON.stringify($json) }}",
		"options":         obj{},
	})
	post["credentials"] = n8nCredential
	flow.add(post)
	flow.add(n8nNode("One Item per Image", "n8n-nodes-base.code", n8nCodeVersion, 4, 0, obj{
		"mode":     "runOnceForAllItems",
		"language": "javaScript",
		"jsCode":   n8nOneItemPerImageCode,
	}))
	flow.add(n8nIfEquals("Completed?", 5, "={{ $json.status }}", string(connector.StatusCompleted)))
	flow.add(n8nDownload("Download", 6, -1, "={{ $json.result.file_url }}"))
	flow.add(n8nStop("Stop: image not completed", 6, 1,
		"={{ $json.error ? 'imgflow job ' + $json.id + ' (image ' + $json.index + ') failed: ' + $json.error.code + ': ' + $json.error.message : 'imgflow job ' + $json.id + ' (image ' + $json.index + ') is still ' + $json.status + '; get the batch later with GET "+base+"/v1/batches/' + $json.batch_id + '/jobs' }}"))
	flow.connect("Start", 0, "Read Images")
	flow.connect("Read Images", 0, "Images to Batch")
	flow.connect("Images to Batch", 0, many.Label)
	flow.connect(many.Label, 0, "One Item per Image")
	flow.connect("One Item per Image", 0, "Completed?")
	flow.connect("Completed?", 0, "Download")
	flow.connect("Completed?", 1, "Stop: image not completed")
	return flow
}

// n8nImagesToBatchCode gathers the incoming items into one batch request
// body (the list field %[1]s; at most %[2]d images).
const n8nImagesToBatchCode = `// Every incoming item is one image: its binary "data" (sent as base64) or
// its json.image_url. The answer's jobs come back in this order.
const records = [];
for (const [i, item] of $input.all().entries()) {
  if (item.binary && item.binary.data) {
    const data = await this.helpers.getBinaryDataBuffer(i, 'data');
    records.push({ image_base64: data.toString('base64'), filename: item.binary.data.fileName });
  } else if (item.json.image_url) {
    records.push({ image_url: item.json.image_url, filename: item.json.filename });
  } else {
    throw new Error('item ' + i + ' has no image: give it a binary field "data" or json.image_url');
  }
}
if (records.length > %[2]d) {
  throw new Error(records.length + ' images: one batch takes at most %[2]d; split them with Loop Over Items');
}
return [{ json: { %[1]s: records } }];
`

// n8nOneItemPerImageCode turns the batch's answer into an item per image.
const n8nOneItemPerImageCode = `// The batch answers a job per image, in input order (jobs[i].index).
return $input.first().json.jobs.map((job) => ({ json: job }));
`
