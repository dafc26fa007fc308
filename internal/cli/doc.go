// Package cli is what fairgrid's commands share on the command line:
// a flag set that reports one clear line instead of its usage, flags
// that may follow the positional arguments, the flag package's errors
// reworded for a person (the nearest known flag, a duration's missing
// unit, a setting's key), --format, ip:port flags, and the Go profiles
// of a stress run.
package cli
