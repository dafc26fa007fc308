// Package lifecycletest checks the lifecycle rule in tests: what a
// front-end's New acquires (sockets, files), its Close releases, whether
// Run ran or not; Close ends a Run in progress; and a second Close is
// harmless. Released counts the process's open files in /proc/self/fd,
// and skips where there is none (not Linux).
package lifecycletest
