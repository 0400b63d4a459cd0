package redisstore

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// hashTag is the part of key Redis Cluster hashes: the first non-empty {...}.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestKeysOfAJobOrAnOwnerShareOneClusterSlot(t *testing.T) {
	s := New(nil, Options{})
	id, owner := uuid.Must(uuid.NewV7()).String(), "0f1e2d3c"
	for _, k := range []string{s.conn.keys.job(id), s.conn.keys.done(id), s.conn.keys.blob(connector.InputBlobKey(id)), s.conn.keys.blob(connector.OutputBlobKey(id))} {
		if got := hashTag(k); got != id {
			t.Errorf("key %q hashes on %q, want the job id %q", k, got, id)
		}
	}
	for _, k := range []string{s.conn.keys.jobIndex(owner), s.conn.keys.idem(owner, "retry-{1}"), s.conn.keys.acct(owner), s.conn.keys.hookIndex(owner)} {
		if got := hashTag(k); got != owner {
			t.Errorf("key %q hashes on %q, want the owner %q", k, got, owner)
		}
	}
}

// TestKeyLayoutIsPinned pins every key name of keys.go's table byte for
// byte: a Redis written by one build is read by the next, so a changed name
// is a schema change (a Migration), never an edit.
func TestKeyLayoutIsPinned(t *testing.T) {
	k := New(nil, Options{Prefix: "p:"}).conn.keys
	d := connector.DedupeKey{Owner: "o", SHA256: "ab", Options: "q80"}
	for got, want := range map[string]string{
		k.job("j"):                           "p:job:{j}",
		k.jobIndex("o"):                      "p:jobs:{o}",
		k.stagedJob("j"):                     "p:jobmaking:{j}",
		k.inflight("o"):                      "p:inflight:{o}",
		k.unqueued():                         "p:unqueued",
		k.calls("j"):                         "p:attempts:{j}",
		k.done("j"):                          "p:done:{j}",
		k.doneChannels():                     "p:done:",
		k.batch("b"):                         "p:batch:{b}",
		k.batchCount("b"):                    "p:batchn:{b}",
		k.batchIndex("o"):                    "p:batches:{o}",
		k.runningBatches():                   "p:batches:running",
		k.batchMaking("b"):                   "p:batchmaking:{b}",
		k.batchLease("b"):                    "p:batchlease:{b}",
		k.making():                           "p:making",
		k.hook("h"):                          "p:hook:{h}",
		k.hookIndex("o"):                     "p:hooks:{o}",
		k.deliveries("j"):                    "p:deliveries:{j}",
		k.msg("m"):                           "p:msg:{m}",
		k.deliveryIndex("o"):                 "p:dlvidx:{o}",
		k.cbSecret("o"):                      "p:cbsecret:{o}",
		k.endpoint("e"):                      "p:endpoint:{e}",
		k.idem("o", "key"):                   "p:idem:{o}:key",
		k.idemLease("o", "key"):              "p:idemlease:{o}:key",
		k.acct("o"):                          "p:acct:{o}",
		k.confirmed("o"):                     "p:acctok:{o}",
		k.outbound("o"):                      "p:outbudget:{o}",
		k.blob(connector.InputBlobKey("j")):  "p:blob:in:{j}",
		k.blob(connector.OutputBlobKey("j")): "p:blob:out:{j}",
		k.blobDue(29000000):                  "p:blobdue:{29000000}",
		k.claim("n"):                         "p:claim:{n}",
		k.dedupe(d):                          "p:dedupe:{o}:ab:q80",
		k.dedupeClaim(d):                     "p:dedupeclaim:{o}:ab:q80",
		k.schema():                           "p:schema",
		k.schemaLock():                       "p:schema:lock",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
