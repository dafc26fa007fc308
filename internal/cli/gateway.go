package cli

import (
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// GatewayFlags are fairgrid gateway's command line.
type GatewayFlags struct {
	Settings       *Settings
	ConfigPath     *string
	Check          *bool
	listen, region *string
	Duration       *time.Duration
}

// BindGatewayFlags declares the gateway's flags on fs: run's that apply,
// and one for each [gateway] key a command line needs.
func BindGatewayFlags(fs *flag.FlagSet) *GatewayFlags {
	c := &GatewayFlags{}
	c.ConfigPath, c.Check = ConfigFlags(fs)
	c.listen = fs.String("listen", "", "public UDP address viewers reach (the region's ExternalHostName and port); with --region, one more route")
	c.region = fs.String("region", "", "the region's internal UDP address (InternalAddress:InternalPort); with --listen")
	c.Settings = BindSettings(fs, GatewaySettings()...)
	c.Duration = fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	return c
}

// GatewayReloader applies the file anew (SIGHUP), the gateway's Reloader
// for sidecar.Reloads, which counts and logs a refusal as for run and
// proxy: what can change live does, and the log names what needs a
// restart (gateway.Reconfigure's, and configs.GatewayRestart's).
func GatewayReloader(gw *gateway.Gateway, load func() (*configs.File, gateway.Config, error), start *configs.File, level *slog.LevelVar, log *slog.Logger) sidecar.ReloadFunc {
	return func() (applied, restart []string, err error) {
		f, cfg, err := load()
		if err != nil {
			return nil, nil, err
		}
		if restart, err = gw.Reconfigure(cfg); err != nil {
			return nil, nil, err
		}
		restart = append(restart, configs.GatewayRestart(start, f)...)
		level.Set(f.Log.Level.Level())
		log.Info("configuration reloaded", "controller", cfg.Control.Controller, "needs_restart", strings.Join(restart, ","))
		return nil, restart, nil
	}
}

// Load reads --config (or the defaults), applies the flags the user set
// over it (those the gateway shares with run through run's settings, so
// one rule serves both), adds --listen and --region's route, and checks
// that a route is configured.
func (c *GatewayFlags) Load() (*configs.File, gateway.Config, error) {
	f, err := c.Settings.Load(*c.ConfigPath)
	if err != nil {
		return nil, gateway.Config{}, err
	}
	cfg, err := f.GatewayStart(*c.listen, *c.region)
	if err != nil {
		return nil, gateway.Config{}, err
	}
	return f, cfg, nil
}
