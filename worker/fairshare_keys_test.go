package worker

import "testing"

// A key's share shrinks with the keys running or waiting: two keys with
// many slow tasks leave a worker free, and a third key's task takes it.
func TestTwoFloodingKeysLeaveAWorkerForAThird(t *testing.T) {
	const workers, keyShare = 4, 3
	l := &localShare{workers: workers}
	// Both keys have more tasks than workers; they come in turn, and every
	// refused task comes back (parked) until the two hold what they may.
	total := 0
	for range 20 {
		for _, key := range []string{"a", "b"} {
			if _, ok := l.take(key, keyShare); ok {
				total++
			}
		}
	}
	if total >= workers {
		t.Fatalf("keys a and b run %d tasks on %d workers; want a worker left free", total, workers)
	}
	if _, ok := l.take("c", keyShare); !ok {
		t.Fatal("key c's task was refused while a and b flood")
	}
}

// A key that held a large share alone gives way when another key waits:
// its next task waits until its count is under the smaller share, and the
// worker its ended task frees goes to a third key.
func TestARunningKeysShareShrinksWhenOthersWait(t *testing.T) {
	const workers, keyShare = 4, 3
	l := &localShare{workers: workers}
	for i := range keyShare {
		if _, ok := l.take("a", keyShare); !ok {
			t.Fatalf("key a alone: task %d refused; want %d at once", i+1, keyShare)
		}
	}
	if _, ok := l.take("a", keyShare); ok {
		t.Fatal("key a alone ran past its share")
	}
	if _, ok := l.take("b", keyShare); !ok {
		t.Fatal("key b's first task refused")
	}
	if _, ok := l.take("b", keyShare); ok {
		t.Fatal("key b ran a second task while a holds three")
	}
	l.release("a") // one of a's slow tasks ends
	if _, ok := l.take("a", keyShare); ok {
		t.Fatal("key a took its freed worker back while b waits; want its share shrunk to one")
	}
	if _, ok := l.take("c", keyShare); !ok {
		t.Fatal("key c's task was refused with a worker free")
	}
}
