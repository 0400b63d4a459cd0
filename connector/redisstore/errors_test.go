package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// fakeRedis is a RESP server on loopback that answers the connection's
// handshake and then every command with reply: what a Redis restarting,
// failing over or cut off looks like to a client. reply "" closes the
// connection on the first command (a reset); "hang" never answers.
func fakeRedis(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveFake(c, reply)
		}
	}()
	return l.Addr().String()
}

func serveFake(c net.Conn, reply string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		switch name := strings.ToUpper(args[0]); {
		case name == "HELLO":
			io.WriteString(c, "-ERR unknown command 'HELLO'\r\n") // RESP2 then
		case name == "CLIENT" || name == "SELECT":
			io.WriteString(c, "+OK\r\n")
		case reply == "":
			return
		case reply == "hang":
			io.Copy(io.Discard, r)
			return
		default:
			io.WriteString(c, "-"+reply+"\r\n")
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, errors.New("not a command")
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// What a restart, a failover or a cut-off connection answers is "not now",
// never a permanent error: the worker retries in place on EUNAVAILABLE and
// fails a job for good on anything else, so a charged answer met by one of
// these was thrown away (NOSCRIPT after a Redis restart).
func TestRestartAndFailoverRepliesAreUnavailable(t *testing.T) {
	redis.SetLogger(quietLogger{})
	replies := map[string]string{
		"NOSCRIPT":    "NOSCRIPT No matching script. Please use EVAL.",
		"LOADING":     "LOADING Redis is loading the dataset in memory",
		"READONLY":    "READONLY You can't write against a read only replica.",
		"MASTERDOWN":  "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"max clients": "ERR max number of clients reached",
		"reset":       "",
		"timeout":     "hang",
	}
	for name, reply := range replies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb := redis.NewClient(&redis.Options{Addr: fakeRedis(t, reply), MaxRetries: -1,
				ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			s := New(rdb, Options{Prefix: "fake:", Unbatched: true})
			id := uuid.Must(uuid.NewV7()).String()
			answer := &connector.KeptAnswer{Result: &connector.JobResult{CompressedSize: 3}}
			steps := map[string]func(ctx context.Context) error{
				"Get": func(ctx context.Context) error { _, err := s.Jobs.Get(ctx, id); return err },
				"Update": func(ctx context.Context) error {
					_, err := s.Jobs.Update(ctx, id, func(*connector.Job) error { return nil })
					return err
				},
				"beginCall":      func(ctx context.Context) error { _, err := s.Jobs.beginCall(ctx, id, 1); return err },
				"keepAnswerOnly": func(ctx context.Context) error { return s.Jobs.keepAnswerOnly(ctx, id, 1, answer) },
				"keepAnswer": func(ctx context.Context) error {
					return s.Jobs.keepAnswer(ctx, id, 1, answer, bytes.NewReader([]byte("png")), time.Minute)
				},
			}
			for step, run := range steps {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := run(ctx)
				cancel()
				if code := connector.ErrorCodeOf(err); code != connector.EUNAVAILABLE {
					t.Errorf("%s: error code %q (%v), want %q", step, code, err, connector.EUNAVAILABLE)
				}
			}
		})
	}
}

// After a restart Redis has forgotten every script: the store loads them
// again by itself, on the paths that run one alone and those that pipeline.
func TestScriptsLoadAgainAfterAFlush(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "owner", connector.StatusQueued)
	if _, err := s.Jobs.beginCall(ctx, job.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
		t.Skipf("SCRIPT FLUSH: %v", err)
	}
	answer := &connector.KeptAnswer{Result: &connector.JobResult{CompressedSize: 3}}
	if err := s.Jobs.keepAnswer(ctx, job.ID, 1, answer, bytes.NewReader([]byte("png")), time.Minute); err != nil {
		t.Fatalf("KeepAnswerWithBytes after SCRIPT FLUSH: %v", err)
	}
	r.Client.ScriptFlush(ctx)
	if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }); err != nil {
		t.Fatalf("Update after SCRIPT FLUSH: %v", err)
	}
}
