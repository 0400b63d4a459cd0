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
	for _, k := range []string{s.jobKey(id), s.doneChannel(id), s.blobKey(connector.InputBlobKey(id)), s.blobKey(connector.OutputBlobKey(id))} {
		if got := hashTag(k); got != id {
			t.Errorf("key %q hashes on %q, want the job id %q", k, got, id)
		}
	}
	for _, k := range []string{s.jobIndexKey(owner), s.Idempotency.idemKey(owner, "retry-{1}"), s.Accounts.acctKey(owner), s.hookIndexKey(owner)} {
		if got := hashTag(k); got != owner {
			t.Errorf("key %q hashes on %q, want the owner %q", k, got, owner)
		}
	}
}
