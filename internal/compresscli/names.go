package compresscli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// Every input has its own result. Before anything is sent, each file is
// given its output path, by one rule, the batch archive's
// (connector.Names):
//
//   - a result keeps its input's name (under --out: its path relative to
//     its folder argument) unless its type differs from the input's
//     (--convert, a HEIC photo becoming a JPEG): then it takes its type's
//     extension;
//   - results whose names keep their inputs' come first, then the others,
//     each in the order the files were found (arguments in the order given,
//     a folder's files in path order);
//   - a name already given (compared case-insensitively) gets -2, -3, …
//     before the extension: logo.png and logo.jpg converted to WebP are
//     logo.webp and logo-2.webp;
//   - with --in-place a result whose name differs from its input's goes
//     beside it, and never over another file: IMG_7.heic beside IMG_7.jpg
//     becomes IMG_7-2.jpg, and IMG_7.jpg stays the picture it was.
//
// So a rerun of the same command gives every file the same path, and its
// state (keyed by each input's own path) finds what it wrote.

// plan gives each file its Type (sniffed from its content) and its Dest.
func (r *run) plan(files []*file) {
	r.names = connector.NewNames()
	var renamed []*file
	for _, f := range files {
		f.Type = sniffFile(f.Real)
		f.Want = r.outputType(f)
		natural := r.outPath(f)
		if f.Want != "" && f.Want != f.Type {
			renamed = append(renamed, f)
			continue
		}
		if r.o.InPlace {
			r.names.Claim(f.Real)
			f.Dest = f.Real // its own file, whatever another's name
		} else {
			f.Dest = r.names.Claim(natural)
		}
	}
	if r.o.InPlace {
		for _, f := range renamed {
			r.names.Claim(f.Real) // an input is never another's result
		}
	}
	for _, f := range renamed {
		f.Dest = r.claim(f, withType(r.outPath(f), f.Want))
	}
}

// claim gives f a name for its result: name, or the first free -N one.
// In place, a file already there is passed over unless it is f's own
// result from an earlier run.
func (r *run) claim(f *file, name string) string {
	var busy func(string) bool
	if r.o.InPlace {
		own := r.st.of(f).Output
		busy = func(p string) bool { return p != own && p != f.Real && exists(p) }
	}
	return r.names.ClaimFree(name, busy)
}

// outputType is the type f's result is expected to have: the --convert
// type, JPEG for a HEIC photo, else the input's own ("" when unknown).
func (r *run) outputType(f *file) string {
	switch {
	case r.o.Transform.Convert != "":
		return connector.ConvertTypeOf(r.o.Transform.Convert)
	case f.Type == "image/heic" || f.Type == "image/heif":
		return "image/jpeg"
	}
	return f.Type
}

// destFor is where the result of f, of type mimeType, goes: its planned
// path, or (when the API answered another type than expected) a name of
// its own with that type's extension.
func (r *run) destFor(f *file, mimeType string) string {
	if mimeType == f.Want || mimeType == "" || f.Dest == "" {
		if f.Dest == "" {
			return r.outPath(f)
		}
		return f.Dest
	}
	if mimeType == f.Type {
		return f.Dest
	}
	return r.claim(f, withType(r.outPath(f), mimeType))
}

// withType is path with the extension of mimeType, unless it has one of
// that type already (.jpeg, .jfif and .jpe are JPEG's too).
func withType(path, mimeType string) string {
	ext := connector.ExtensionOf(mimeType)
	if ext == "" {
		return path
	}
	if typeOfExt(filepath.Ext(path)) == mimeType {
		return path
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + ext
}

// typeOfExt is the media type a file extension names, "" when none of
// the API's.
func typeOfExt(ext string) string {
	ext = strings.ToLower(ext)
	for _, f := range Formats {
		for _, e := range f.Exts {
			if e == ext {
				return f.MediaType
			}
		}
	}
	return ""
}

// sniffFile is the media type of a file's content (its first bytes), ""
// when it is none the API takes or cannot be read.
func sniffFile(path string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	head := make([]byte, connector.SniffLen)
	n, _ := fh.Read(head)
	return connector.SniffInputType(head[:n])
}
