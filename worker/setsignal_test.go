package worker

import (
	"testing"
	"time"
)

func TestSetSignalsWakeEveryWaiterAndForgetTheSet(t *testing.T) {
	var s setSignals
	a, releaseA := s.watch("set1")
	b, releaseB := s.watch("set1")
	other, releaseOther := s.watch("set2")
	s.ready("set1")
	for i, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(time.Second):
			t.Fatalf("waiter %d not woken", i)
		}
	}
	select {
	case <-other:
		t.Fatal("another set's waiter woken")
	default:
	}
	releaseA()
	releaseB()
	releaseOther()
	if len(s.m) != 0 {
		t.Fatalf("%d sets left after every waiter released", len(s.m))
	}
	// A set made ready before anyone waits: a later waiter polls instead.
	s.ready("set3")
	c, releaseC := s.watch("set3")
	select {
	case <-c:
		t.Fatal("a waiter after the signal woken by it")
	default:
	}
	releaseC()
	if len(s.m) != 0 {
		t.Fatalf("%d sets left", len(s.m))
	}
}
