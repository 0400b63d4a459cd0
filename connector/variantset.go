package connector

import (
	"cmp"
	"fmt"
	"html"
	"slices"
	"strings"
)

// A responsive set is a batch whose items are the variants of one source
// (Batch.VariantIDs, Job.Variant): made all-or-nothing like any batch,
// each variant a job charged, retried and deduplicated on its own, the
// set's ZIP the batch's archive, and batch.finished its one event. What a
// set adds is its answer: the variants keyed by id, a srcset and a
// <picture> snippet of the completed ones.

// VariantSet is a set as its owner reads it: the batch, plus its
// variants' jobs by id and the markup that uses them.
type VariantSet struct {
	*Batch
	// Variants are the variants' jobs by id, each as GET /v1/jobs/{id}
	// shows it.
	Variants map[string]*Job `json:"variants"`
	// Srcset lists the completed variants of the fallback type (the
	// source's, or JPEG/PNG) as "url 320w, url 800w", narrowest first.
	Srcset string `json:"srcset"`
	// Picture is a <picture> element: a <source> per modern type asked
	// for (AVIF, then WebP), and an <img> of the fallback type.
	Picture string `json:"picture"`
}

// NewVariantSet puts a set's answer together from its batch view and its
// items' jobs as their owner sees them (file_url filled).
func NewVariantSet(b *Batch, jobs []*Job) *VariantSet {
	set := &VariantSet{Batch: b, Variants: make(map[string]*Job, len(jobs))}
	for _, j := range jobs {
		if j != nil && j.Variant != "" {
			set.Variants[j.Variant] = j
		}
	}
	groups := groupByType(jobs)
	fallback := fallbackType(groups)
	set.Srcset = srcset(groups[fallback])
	set.Picture = picture(groups, fallback)
	return set
}

// sized is a completed variant's file, its URL and dimensions.
type sized struct {
	url           string
	width, height int
}

// groupByType groups the completed variants with known dimensions by the
// type of their file, each group narrowest first.
func groupByType(jobs []*Job) map[string][]sized {
	groups := map[string][]sized{}
	for _, j := range jobs {
		if j == nil || j.Status != StatusCompleted || j.Result == nil || j.Result.Width <= 0 || j.Result.FileURL == "" {
			continue
		}
		t := j.Result.MIMEType
		groups[t] = append(groups[t], sized{url: j.Result.FileURL, width: j.Result.Width, height: j.Result.Height})
	}
	for _, g := range groups {
		slices.SortStableFunc(g, func(a, b sized) int { return cmp.Compare(a.width, b.width) })
	}
	return groups
}

// modernTypes are the types a <picture> offers as <source>s, best first;
// a browser takes the first it can show.
var modernTypes = []string{"image/avif", "image/webp"}

// fallbackType is the type of the <img>: JPEG, then PNG, else the most
// widely shown type the set has.
func fallbackType(groups map[string][]sized) string {
	for _, t := range []string{"image/jpeg", "image/png", "image/webp", "image/avif"} {
		if len(groups[t]) > 0 {
			return t
		}
	}
	return ""
}

func srcset(g []sized) string {
	parts := make([]string, 0, len(g))
	for _, s := range g {
		parts = append(parts, fmt.Sprintf("%s %dw", s.url, s.width))
	}
	return strings.Join(parts, ", ")
}

// picture is the <picture> element of the set; "" when nothing completed.
func picture(groups map[string][]sized, fallback string) string {
	if fallback == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("<picture>")
	for _, t := range modernTypes {
		if t == fallback || len(groups[t]) == 0 {
			continue
		}
		fmt.Fprintf(&b, `<source type="%s" srcset="%s" sizes="100vw">`, t, html.EscapeString(srcset(groups[t])))
	}
	g := groups[fallback]
	largest := g[len(g)-1]
	fmt.Fprintf(&b, `<img src="%s" srcset="%s" sizes="100vw" width="%d" height="%d" alt="">`,
		html.EscapeString(largest.url), html.EscapeString(srcset(g)), largest.width, largest.height)
	b.WriteString("</picture>")
	return b.String()
}

// VariantSetAnswer is a set with its items' jobs in index order, as
// POST /v1/jobs with ?include=jobs, and the MCP tool, answer it.
type VariantSetAnswer struct {
	*VariantSet
	Jobs []*Job `json:"jobs,omitempty"`
}
