package compresscli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// state is what earlier runs did, so that a second run of the same
// command charges nothing: files done are skipped, and files sent in a
// batch whose results did not come back yet are followed there, not sent
// again. It is keyed by the file's real path (absolute, symlinks resolved).
type state struct {
	path  string
	Files map[string]*fileState `json:"files"`
	// Pending are batches being sent, by Idempotency-Key: their files'
	// real paths in the order sent. Saved before the request, so that a
	// run stopped before the answer (Ctrl-C) is resent by the next one
	// with the same key and the same files, and the API answers with the
	// batch it made, if it made one, instead of charging it again.
	Pending map[string][]string `json:"pending,omitempty"`
}

// fileState is one file's record.
type fileState struct {
	// Done lists content hashes this file had when it was done: the
	// original, and the result when it replaced the file (--in-place).
	Done []string `json:"done,omitempty"`
	// Sent is the job compressing the content hash SentHash, while its
	// result is awaited.
	SentHash string `json:"sent_hash,omitempty"`
	JobID    string `json:"job_id,omitempty"`
	// Output is where its result was written (names.go): a rerun finds it
	// there, and in place does not take it for another file.
	Output string `json:"output,omitempty"`
}

func (s *state) pend(key string, files []*file) {
	if s.Pending == nil {
		s.Pending = map[string][]string{}
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Real
	}
	s.Pending[key] = paths
}

// stateFile is where the state lives: beside the results under --out, or
// in the user's cache folder for --in-place.
func stateFile(out string, inPlace bool) (string, error) {
	if !inPlace {
		return filepath.Join(out, ".imgflow-compress.json"), nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "imgflow", "compress-state.json"), nil
}

func loadState(path string) (*state, error) {
	st := &state{path: path, Files: map[string]*fileState{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, st); err != nil || st.Files == nil {
		st.Files = map[string]*fileState{} // unreadable: start afresh
	}
	return st, nil
}

// save writes the state through a temporary file, so a run killed while
// saving leaves the old one.
func (s *state) save() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

func (s *state) of(f *file) *fileState {
	fs := s.Files[f.Real]
	if fs == nil {
		fs = &fileState{}
		s.Files[f.Real] = fs
	}
	return fs
}

// done reports whether f, as it is now, was done by an earlier run.
func (s *state) done(f *file) bool {
	fs := s.Files[f.Real]
	if fs == nil {
		return false
	}
	for _, h := range fs.Done {
		if h == f.Hash {
			return true
		}
	}
	return false
}
