package fetch

import (
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Slow hosts are cut early so that one key's trickling URLs do not hold
// the workers other keys' jobs need: the headers must come within
// FirstByte, and the body at MinRate or faster once RateGrace has passed.
var (
	errNoFirstByte = errors.New("no answer before the first-byte deadline")
	errTooSlow     = errors.New("body slower than the minimum rate")
)

// rateReader counts the bytes read; a watchdog compares them with MinRate
// every half second and cancels the request (cause errTooSlow) when the
// average falls below it. It must cancel rather than wait for Read to
// return: a trickling host makes Read block.
type rateReader struct {
	io.ReadCloser
	n    atomic.Int64
	stop chan struct{}
}

func (r *rateReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (r *rateReader) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	return r.ReadCloser.Close()
}

func (f *Fetcher) watchRate(body io.ReadCloser, cancel func(error)) io.ReadCloser {
	r := &rateReader{ReadCloser: body, stop: make(chan struct{})}
	start := time.Now()
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-tick.C:
				elapsed := time.Since(start)
				if elapsed < f.opts.RateGrace {
					continue
				}
				if float64(r.n.Load()) < float64(f.opts.MinRate)*elapsed.Seconds() {
					cancel(errTooSlow)
					return
				}
			}
		}
	}()
	return r
}
