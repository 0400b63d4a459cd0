package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// health is liveness: no dependencies, so a slow Redis never restarts pods.
func (s *Server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "healthy", "service": "imgflow"})
}
