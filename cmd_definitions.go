package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/imgflow/imgflow/definitions"
)

// definitionsOptions are the flags of `imgflow definitions`.
type definitionsOptions struct {
	// Out is the directory that receives one folder per platform
	// (--out; default "definitions").
	Out string
	// BaseURL is the public URL the definitions call (--base-url,
	// $IMGFLOW_PUBLIC_URL; default https://imgflow.example.com, the
	// placeholder the committed files use).
	BaseURL string
}

// runDefinitions writes every platform's connector definition files below
// --out, rendered for --base-url. Files of the same name are overwritten;
// nothing else in the directory is touched.
func runDefinitions(ctx context.Context, args []string) error {
	var o definitionsOptions
	fs := newFlagSet("definitions", "Write every platform's connector definition files (Zapier, n8n, Make, Power Automate, OpenAPI).")
	fs.String(&o.Out, "out", "", "definitions", "directory to write into, one folder per platform")
	fs.String(&o.BaseURL, "base-url", "IMGFLOW_PUBLIC_URL", "https://imgflow.example.com", "public URL of the imgflow API the definitions call")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New("unexpected arguments; use --out DIR --base-url URL")
	}
	files, err := definitions.Render(o.BaseURL)
	if err != nil {
		return err
	}
	for _, f := range files {
		path := filepath.Join(o.Out, f.Platform, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return err
		}
	}
	// The n8n node package reads the catalog itself (no base URL: its
	// credential holds that), so it is written beside the platforms.
	node, err := definitions.N8nNodeCatalog()
	if err != nil {
		return err
	}
	path := filepath.Join(o.Out, definitions.N8nNodeCatalogPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, node, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %d files for %s below %s\n", len(files)+1, o.BaseURL, o.Out)
	return nil
}
