package main

import (
	"context"
	"log/slog"

	"github.com/imgflow/imgflow/connector/imaging"
)

// serveOptions configure `imgflow serve`.
type serveOptions struct {
	appOptions
	// Addr (--addr, IMGFLOW_ADDR): where the API listens. Default :8080.
	Addr string
	// AdminToken (--admin-token, IMGFLOW_ADMIN_TOKEN): bearer token of the
	// queue dashboard at /admin/queues. Empty (the default) leaves it out.
	AdminToken string
}

// runServe runs the HTTP API only; workers run elsewhere (imgflow work).
func runServe(ctx context.Context, args []string) error {
	var o serveOptions
	fs := newFlagSet("serve", "Runs the HTTP API only. Workers (imgflow work) share its Redis and IMGFLOW_SECRET.")
	fs.String(&o.Addr, "addr", "IMGFLOW_ADDR", ":8080", "listen address of the API")
	fs.String(&o.AdminToken, "admin-token", "IMGFLOW_ADMIN_TOKEN", "", "token for the queue dashboard at /admin/queues (off when empty)")
	addAppFlags(fs, &o.appOptions)
	addAPIFlags(fs, &o.appOptions)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := o.validate(true); err != nil {
		return err
	}
	if err := o.validateAPI(); err != nil {
		return err
	}
	a, closeApp, err := connectApp(ctx, o.appOptions)
	if err != nil {
		return err
	}
	defer closeApp()
	a.adminToken = o.AdminToken
	slog.Info("imgflow API listening", "addr", o.Addr, "public_url", o.PublicURL, "transforms", imaging.Status())
	return a.apiServer(slog.Default(), nil).Run(ctx, o.Addr)
}
