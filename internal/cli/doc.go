// Package cli is what fairgrid's commands share on the command line, so
// that cmd/fairgrid only wires:
//
//   - parsing: a flag set that reports one clear line instead of its
//     usage, flags that may follow the positional arguments, the flag
//     package's errors reworded for a person (the nearest known flag, a
//     duration's missing unit, a setting's key), --format, ip:port flags;
//   - the front-ends' settings: flags bound to configuration keys
//     (Settings; RunSettings, ProxySettings, GatewaySettings), read over
//     the file by Load, --config and --check-config (ConfigArg), the
//     proxy's credentials (ProxyConfig) and the gateway's command line
//     and reloads (GatewayFlags, GatewayReloader);
//   - help: the commands and their synopses, the usage, the command
//     meant when a name is mistyped;
//   - running: the signals' context (RunContext, a second signal quits
//     at once), the metrics listener, the result writer that turns a
//     write error into exit 1, the version, the Go profiles of a stress
//     run, and fairgrid rate's checks and output.
package cli
