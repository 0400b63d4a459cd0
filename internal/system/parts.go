package system

import (
	"github.com/imgflow/imgflow/connector/guard"
)

// Allow is where flows' URLs may lead besides public addresses: the
// allow-list, with loopback in dev (dev's banner prints it).
func (a *App) Allow() guard.Policy { return a.allow }
