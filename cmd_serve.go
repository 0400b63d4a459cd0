package main

import (
	"context"
	"log/slog"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/internal/version"
)

// serveOptions configure `imgflow serve`.
type serveOptions struct {
	system.Options
	// Addr (--addr, IMGFLOW_ADDR): where the API listens. Default :8080.
	Addr string
	// OpsAddr (--ops-addr, IMGFLOW_OPS_ADDR): where /metrics, /health,
	// /ready and /admin/queues listen, apart from the API. Default :9090.
	OpsAddr string
}

// runServe runs the HTTP API only; workers run elsewhere (imgflow work).
func runServe(ctx context.Context, args []string) error {
	var o serveOptions
	fs := newFlagSet("serve", "Runs the HTTP API only. Workers (imgflow work) share its Redis and IMGFLOW_SECRET.")
	fs.String(&o.Addr, "addr", "IMGFLOW_ADDR", ":8080", "listen address of the API")
	fs.String(&o.OpsAddr, "ops-addr", "IMGFLOW_OPS_ADDR", serveOpsAddr, "listen address of /metrics, /health, /ready (Redis answers) and /admin/queues, apart from the API")
	fs.String(&o.AdminToken, "admin-token", "IMGFLOW_ADMIN_TOKEN", "", "token for the queue dashboard at /admin/queues on the ops address (off when empty)")
	addAppFlags(fs, &o.Options)
	addAPIFlags(fs, &o.Options)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := o.Validate(true); err != nil {
		return err
	}
	if err := o.ValidateAPI(); err != nil {
		return err
	}
	o.Version = version.String()
	a, ops, stop, err := startSystem(ctx, o.OpsAddr, o.Options)
	defer stop()
	if a == nil || err != nil {
		return err
	}
	api := a.APIServer(slog.Default(), nil)
	ops.set(a.OpsHandler(slog.Default(), true))
	slog.Info("imgflow API listening", "addr", o.Addr, "ops_addr", o.OpsAddr, "public_url", o.PublicURL, "transforms", imaging.Status())
	return api.Run(ctx, o.Addr)
}
