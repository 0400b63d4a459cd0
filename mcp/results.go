package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector"
)

// Tool results the agent way: the REST answer as structuredContent, a
// resource_link to each compressed file's signed URL (with its type and
// size), and one line of text; the image itself only as a small preview,
// when asked.

// jobResult answers a job: done (with its file), failed (a tool error
// carrying the job's error code) or still running (how to follow it).
func (t *toolSet) jobResult(ctx context.Context, key string, job *connector.Job, waited time.Duration, preview bool) *sdk.CallToolResult {
	res := &sdk.CallToolResult{StructuredContent: structured(job)}
	switch {
	case job.Status == connector.StatusCompleted && job.Result != nil:
		r := job.Result
		line := fmt.Sprintf("Compressed %s: %s → %s (%.1f%% smaller)", nameOf(job), humanBytes(r.OriginalSize), humanBytes(r.CompressedSize), r.CompressionRatio)
		if job.DeduplicatedFrom != "" {
			line += ", reused from job " + job.DeduplicatedFrom + " at no credit"
		}
		if r.CreditsRemaining != nil {
			line += fmt.Sprintf("; %d credits left", *r.CreditsRemaining)
		}
		line += ". Job " + job.ID + ". File: " + r.FileURL
		res.Content = append(res.Content, &sdk.TextContent{Text: line}, fileLink(job))
		if preview {
			res.Content = append(res.Content, t.preview(ctx, key, job))
		}
	case job.Status == connector.StatusFailed:
		res.IsError = true
		msg := "Job " + job.ID + " failed"
		if job.Error != nil {
			msg += ": " + string(job.Error.Code) + ": " + job.Error.Message
		}
		res.Content = append(res.Content, &sdk.TextContent{Text: msg})
	default:
		res.Content = append(res.Content, &sdk.TextContent{Text: fmt.Sprintf(
			"Job %s is still %s after %s. Call get_job with id %q to wait for it (up to 25 s a call).", job.ID, job.Status, waited, job.ID)})
	}
	return res
}

// fileLink is a completed job's compressed file as a resource_link.
func fileLink(job *connector.Job) *sdk.ResourceLink {
	r := job.Result
	size := r.CompressedSize
	return &sdk.ResourceLink{URI: r.FileURL, Name: nameOf(job), Title: "Compressed " + nameOf(job),
		Description: fmt.Sprintf("Compressed image of job %s; a signed link that works without the API key until it expires.", job.ID),
		MIMEType:    r.MIMEType, Size: &size}
}

func nameOf(job *connector.Job) string {
	if job.Result != nil && job.Result.Filename != "" {
		return job.Result.Filename
	}
	if job.Input.Filename != "" {
		return job.Input.Filename
	}
	return "image"
}

// batchResult answers a batch: a line of counts, a link per compressed
// file, and the ZIP archive once every item ended.
func batchResult(b *connector.BatchAnswer) *sdk.CallToolResult {
	c := b.Counts
	line := fmt.Sprintf("Batch %s is %s: %d of %d images compressed, %d failed, %s saved.", b.ID, b.Status, c.Completed, c.Total, c.Failed, humanBytes(b.SavedBytes))
	content := append([]sdk.Content{&sdk.TextContent{Text: line + stillRunning(c)}},
		itemLinks(b.Batch, b.Jobs, "batch-"+b.ID+".zip", "All compressed images (ZIP)")...)
	return &sdk.CallToolResult{StructuredContent: structured(b), Content: content}
}

// stillRunning tells how many items of a batch or set still run, and how
// to wait for them; "" when none do.
func stillRunning(c connector.BatchCounts) string {
	if running := c.Queued + c.Processing; running > 0 {
		return fmt.Sprintf(" %d still running: call get_job with their ids to wait for them.", running)
	}
	return ""
}

// itemLinks are a link per completed item of batch b (a set's too), and
// its ZIP archive, named zipName, once every item ended.
func itemLinks(b *connector.Batch, jobs []*connector.Job, zipName, zipTitle string) []sdk.Content {
	var links []sdk.Content
	for _, j := range jobs {
		if j.Status == connector.StatusCompleted && j.Result != nil && j.Result.FileURL != "" {
			links = append(links, fileLink(j))
		}
	}
	if b.Status == connector.BatchFinished && b.Links != nil && b.Links.Archive != "" && b.Counts.Completed > 0 {
		links = append(links, &sdk.ResourceLink{URI: b.Links.Archive, Name: zipName, Title: zipTitle, MIMEType: "application/zip"})
	}
	return links
}

// checkResult answers a dry run.
func checkResult(c *connector.ImageCheck) *sdk.CallToolResult {
	line := fmt.Sprintf("%s, %d×%d pixels, %s: compressing it would charge %d credit(s); %d credits left.",
		c.Input.Type, c.Input.Width, c.Input.Height, humanBytes(c.Input.Size), c.WouldCharge, c.CreditsRemaining)
	if c.DeduplicatedFrom != "" {
		line += " Job " + c.DeduplicatedFrom + " already compressed the same image."
	}
	return &sdk.CallToolResult{StructuredContent: structured(c), Content: []sdk.Content{&sdk.TextContent{Text: line}}}
}

// accountResult answers the account, without its webhook secret.
func accountResult(acct *connector.Account) *sdk.CallToolResult {
	line := fmt.Sprintf("%d credits left", acct.CreditsRemaining)
	if acct.UserID != "" {
		line = fmt.Sprintf("Account %s (%s): %s.", acct.UserID, acct.SubscriptionType, line)
	}
	return &sdk.CallToolResult{StructuredContent: structured(acct), Content: []sdk.Content{&sdk.TextContent{Text: line}}}
}

// listResult answers a page of jobs.
func listResult(l *connector.JobList) *sdk.CallToolResult {
	if l.Jobs == nil {
		l.Jobs = []*connector.Job{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d job(s), newest first.", len(l.Jobs))
	for _, j := range l.Jobs {
		fmt.Fprintf(&b, "\n%s %s %s", j.ID, j.Status, nameOf(j))
	}
	if l.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore: call again with cursor %q.", l.NextCursor)
	}
	return &sdk.CallToolResult{StructuredContent: structured(l), Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}
}

// toolError is the structuredContent of a tool error: the REST error, as a
// failed job carries its own.
type toolError struct {
	Error errorView `json:"error"`
}

type errorView struct {
	Code             connector.ErrorCode    `json:"code"`
	Message          string                 `json:"message"`
	Details          []connector.FieldError `json:"details,omitempty"`
	CreditsRemaining *int64                 `json:"credits_remaining,omitempty"`
	RetryAfter       int                    `json:"retry_after,omitempty"`
}

// errorResult is a tool error (isError): the agent's to fix or retry, with
// the code and text the REST API gives.
func errorResult(err error) *sdk.CallToolResult {
	var e *connector.Error
	if !errors.As(err, &e) {
		e = &connector.Error{Code: connector.EINTERNAL, Message: "Internal error"}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		e = &connector.Error{Code: connector.EUNAVAILABLE, Message: "the call was cancelled before it finished; retry it (with the same idempotency_key)"}
	}
	v := errorView{Code: e.Code, Message: e.Message, Details: e.Details, CreditsRemaining: e.CreditsRemaining,
		RetryAfter: int(e.RetryAfter / time.Second)}
	text := string(e.Code) + ": " + e.Message
	for _, d := range e.Details {
		text += "; " + d.Field + ": " + d.Message
	}
	if v.RetryAfter > 0 {
		text += fmt.Sprintf(" (retry after %d s)", v.RetryAfter)
	}
	return &sdk.CallToolResult{IsError: true, StructuredContent: structured(toolError{Error: v}),
		Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// humanBytes is a size in B, kB or MB (powers of 1000, as files show).
func humanBytes(n int64) string {
	switch {
	case n >= 1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// structured is v as structuredContent: its JSON without null members, so
// that it validates against single-typed output schemas. A member the REST
// answer has as null (a fact not known) is absent instead.
func structured(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil || !bytes.Contains(raw, []byte("null")) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return raw
	}
	out, err := json.Marshal(dropNulls(tree))
	if err != nil {
		return raw
	}
	return out
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
			} else {
				t[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}
