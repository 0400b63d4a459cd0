package asynqext

import "runtime/debug"

// LinkedVersion is the version of asynq linked into this binary (a
// replacement's, when go.mod replaces it: its path when it is a local
// copy without a version), and false when the binary
// carries no build information or no asynq.
func LinkedVersion() (string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, m := range info.Deps {
		if m.Path != asynqModule {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Version == "" {
				return r.Path, true
			}
			return r.Version, true
		}
		return m.Version, true
	}
	return "", false
}
