package redisstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func ids(jobs []*connector.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// reversed returns the ids of jobs, newest (last created) first.
func reversed(jobs ...*connector.Job) []string {
	out := ids(jobs)
	slices.Reverse(out)
	return out
}

func list(t *testing.T, s *Store, owner string, f connector.JobFilter) *connector.JobPage {
	t.Helper()
	page, err := s.Jobs.List(context.Background(), owner, f)
	if err != nil {
		t.Fatalf("List(%q, %+v): %v", owner, f, err)
	}
	return page
}

func TestListJobsNewestFirstOnlyTheOwners(t *testing.T) {
	s, _ := newStore(t, Options{})
	var mine []*connector.Job
	for range 3 {
		mine = append(mine, newJob(t, s, "me", connector.StatusQueued))
		newJob(t, s, "other", connector.StatusQueued)
	}
	page := list(t, s, "me", connector.JobFilter{Limit: 10})
	if got, want := ids(page.Jobs), reversed(mine...); !slices.Equal(got, want) {
		t.Fatalf("List ids = %v, want newest first %v", got, want)
	}
	if page.NextCursor != "" {
		t.Fatalf("NextCursor = %q on the only page, want \"\"", page.NextCursor)
	}
	if page.Jobs[0].Owner != "me" {
		t.Fatalf("listed job owner = %q, want me", page.Jobs[0].Owner)
	}
	if empty := list(t, s, "nobody", connector.JobFilter{Limit: 10}); len(empty.Jobs) != 0 || empty.NextCursor != "" {
		t.Fatalf("unknown owner: %d jobs, cursor %q; want none, \"\"", len(empty.Jobs), empty.NextCursor)
	}
}

// A polling trigger pages with the cursor while new jobs keep arriving: the
// pages must neither skip nor repeat any of the jobs that existed before.
func TestListJobsCursorNeitherSkipsNorRepeatsWhileJobsArrive(t *testing.T) {
	s, _ := newStore(t, Options{})
	var old []*connector.Job
	for range 5 {
		old = append(old, newJob(t, s, "me", connector.StatusQueued))
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("still paging after %d pages (seen %v)", pages, seen)
		}
		page := list(t, s, "me", connector.JobFilter{Limit: 2, Cursor: cursor})
		seen = append(seen, ids(page.Jobs)...)
		newJob(t, s, "me", connector.StatusQueued) // arrives between pages
		if page.NextCursor == "" {
			break
		}
		if last := page.Jobs[len(page.Jobs)-1].ID; page.NextCursor != last {
			t.Fatalf("NextCursor = %q, want the last id of the page %q", page.NextCursor, last)
		}
		cursor = page.NextCursor
	}
	if want := reversed(old...); !slices.Equal(seen, want) {
		t.Fatalf("paged ids = %v, want each old job once, newest first: %v", seen, want)
	}
}

func TestListJobsStatusFilterScansPastNonMatchingJobs(t *testing.T) {
	s, _ := newStore(t, Options{})
	var done []*connector.Job
	for range 3 {
		done = append(done, newJob(t, s, "me", connector.StatusCompleted))
	}
	for range 60 { // newer than the completed ones: more than one scan batch
		newJob(t, s, "me", connector.StatusQueued)
	}
	want := reversed(done...)
	page := list(t, s, "me", connector.JobFilter{Status: connector.StatusCompleted, Limit: 2})
	if got := ids(page.Jobs); !slices.Equal(got, want[:2]) {
		t.Fatalf("first page = %v, want %v", got, want[:2])
	}
	if page.NextCursor != want[1] {
		t.Fatalf("NextCursor = %q, want %q", page.NextCursor, want[1])
	}
	page = list(t, s, "me", connector.JobFilter{Status: connector.StatusCompleted, Limit: 2, Cursor: page.NextCursor})
	if got := ids(page.Jobs); !slices.Equal(got, want[2:]) || page.NextCursor != "" {
		t.Fatalf("second page = %v cursor %q, want %v and \"\"", got, page.NextCursor, want[2:])
	}
	for _, j := range page.Jobs {
		if j.Status != connector.StatusCompleted {
			t.Fatalf("filtered page holds a %q job", j.Status)
		}
	}
}

// NextCursor promises another page only when older entries remain, also when
// a scan batch ends exactly on the last job wanted.
func TestListJobsNextCursorOnlyWhenOlderJobsRemain(t *testing.T) {
	s, _ := newStore(t, Options{})
	// 50 jobs = one scan batch for Limit 25, alternating queued (newest) and
	// completed, so the 25th match is the oldest job: the batch's last entry.
	var all []*connector.Job
	for i := range 50 {
		status := connector.StatusQueued
		if i%2 == 0 {
			status = connector.StatusCompleted
		}
		all = append(all, newJob(t, s, "me", status))
	}
	f := connector.JobFilter{Status: connector.StatusCompleted, Limit: 25}
	if page := list(t, s, "me", f); len(page.Jobs) != 25 || page.NextCursor != "" {
		t.Fatalf("all matches on one page: %d jobs, cursor %q; want 25 and \"\"", len(page.Jobs), page.NextCursor)
	}
	if page := list(t, s, "me", connector.JobFilter{Limit: 50}); len(page.Jobs) != 50 || page.NextCursor != "" {
		t.Fatalf("exactly Limit jobs: %d jobs, cursor %q; want 50 and \"\"", len(page.Jobs), page.NextCursor)
	}
	// One older job in the index: now the cursor must point past the page.
	older := &connector.Job{ID: idAt(time.Now().Add(-time.Hour), 1), Owner: "me", Status: connector.StatusQueued}
	if err := s.Jobs.Create(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	page := list(t, s, "me", f)
	if want := all[0].ID; page.NextCursor != want {
		t.Fatalf("with an older entry left: cursor %q, want %q", page.NextCursor, want)
	}
}

func TestListJobsSkipsAndPrunesExpiredRecords(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	a := newJob(t, s, "me", connector.StatusQueued)
	b := newJob(t, s, "me", connector.StatusQueued)
	c := newJob(t, s, "me", connector.StatusQueued)
	r.Client.Del(ctx, s.conn.keys.job(b.ID)) // as if its TTL ran out
	page := list(t, s, "me", connector.JobFilter{Limit: 10})
	if got, want := ids(page.Jobs), reversed(a, c); !slices.Equal(got, want) {
		t.Fatalf("ids = %v, want the live jobs %v", got, want)
	}
	if n := r.Client.ZCard(ctx, s.conn.keys.jobIndex("me")).Val(); n != 2 {
		t.Fatalf("index holds %d entries after listing, want 2 (the expired one pruned)", n)
	}
}

func TestCreateJobPrunesListEntriesOlderThanJobTTL(t *testing.T) {
	now := time.Now()
	s, r := newStore(t, Options{JobTTL: time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	create := func(id string) {
		t.Helper()
		if err := s.Jobs.Create(ctx, &connector.Job{ID: id, Owner: "me", Status: connector.StatusQueued}); err != nil {
			t.Fatal(err)
		}
	}
	old := idAt(now.Add(-2*time.Hour), 1)
	recent := idAt(now.Add(-30*time.Minute), 2)
	create(old)
	create(recent)
	create(idAt(now, 3))
	members := r.Client.ZRange(ctx, s.conn.keys.jobIndex("me"), 0, -1).Val()
	if want := []string{recent, idAt(now, 3)}; !slices.Equal(members, want) {
		t.Fatalf("index = %v, want %v (the 2h-old entry pruned)", members, want)
	}
	recordTTL := r.Client.PTTL(ctx, s.conn.keys.job(idAt(now, 3))).Val()
	if ttl := r.Client.PTTL(ctx, s.conn.keys.jobIndex("me")).Val(); ttl < recordTTL || ttl > time.Hour+listingSlack {
		t.Fatalf("index TTL = %v, want the newest record's (%v) and at most JobTTL (1h) + %v", ttl, recordTTL, listingSlack)
	}
}

func TestListJobsCapsLimit(t *testing.T) {
	s, _ := newStore(t, Options{})
	for range 3 {
		newJob(t, s, "me", connector.StatusQueued)
	}
	if page := list(t, s, "me", connector.JobFilter{Limit: 0}); len(page.Jobs) != 3 {
		t.Fatalf("Limit 0 gave %d jobs, want all 3 (default %d)", len(page.Jobs), DefaultListLimit)
	}
	if page := list(t, s, "me", connector.JobFilter{Limit: 1}); len(page.Jobs) != 1 || page.NextCursor == "" {
		t.Fatalf("Limit 1 gave %d jobs, cursor %q; want 1 and a cursor", len(page.Jobs), page.NextCursor)
	}
}
