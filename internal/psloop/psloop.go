// Package psloop receives a go-redis subscription's messages on the
// caller's goroutine.
//
// go-redis's PubSub.Channel reads on a goroutine of its own and hands each
// message over a channel, and its health check, another goroutine, is
// woken by every message: two goroutines readied per message before the
// consumer runs. On an idle process each readying may start another OS
// thread, which costs a wake-up per message on the path of a job's
// pickup and of its ?wait answer (#46). Run reads and handles on one
// goroutine, and its health check runs on a timer only, never woken by a
// message. What it does on errors and silence is what Channel does: it
// tries again (pausing 100 ms after a second error in a row), go-redis
// reconnects and resubscribes by itself, and a subscription silent for
// healthCheck (3 s) is sent a PING, whose failure makes go-redis reconnect.
package psloop

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// healthCheck is how long a subscription may stay silent before it is
// pinged: go-redis's Channel default (tests shorten it).
var healthCheck = 3 * time.Second

// pingTimeout bounds a health check's PING, as go-redis's Channel does.
const pingTimeout = 5 * time.Second

// Run calls handle with each *redis.Message and *redis.Subscription ps
// receives (a subscription's confirmation comes again after a reconnect),
// on the calling goroutine, until ps is closed. handle must not block.
func Run(ps *redis.PubSub, handle func(msg any)) {
	var last atomic.Int64 // when ps last received anything (UnixNano)
	last.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go pingWhenSilent(ps, &last, stop)
	errs := 0
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			if errs > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			errs++
			continue
		}
		errs = 0
		last.Store(time.Now().UnixNano())
		switch msg.(type) {
		case *redis.Message, *redis.Subscription:
			handle(msg)
		}
	}
}

// pingWhenSilent pings ps when it has received nothing for healthCheck,
// until stop is closed. Its timer is set from the last receipt, so a busy
// subscription costs it a wake-up per healthCheck, not one per message.
func pingWhenSilent(ps *redis.PubSub, last *atomic.Int64, stop chan struct{}) {
	t := time.NewTimer(healthCheck)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if quiet := time.Since(time.Unix(0, last.Load())); quiet < healthCheck {
			t.Reset(healthCheck - quiet)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		// A PING that cannot be sent makes go-redis drop the connection;
		// the next Receive reconnects and resubscribes.
		_ = ps.Ping(ctx)
		cancel()
		last.Store(time.Now().UnixNano())
		t.Reset(healthCheck)
	}
}
