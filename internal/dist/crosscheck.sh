#!/usr/bin/env bash
# Cross-platform check, part of `make test`: every package and its tests
# compile for Windows and macOS, so a Linux-only call that slips into
# portable code shows in CI. `go vet` type-checks the tests too; `go
# build` compiles and links everything.
# Raw sockets and AF_PACKET stay Linux-only behind build tags
# (capture/live_*.go, throttle/rawsend_*.go).
#
# Usage: internal/dist/crosscheck.sh   (GO selects the go tool; PLATFORMS
# the GOOS/GOARCH pairs, "windows/amd64 darwin/arm64" by default: each OS
# and each architecture once, since the code has no architecture-specific
# files outside opensim's prefetch, which builds for both)
#
# With a warm build cache it takes seconds. On a new machine it compiles
# the standard library and the dependencies once per platform, a few
# minutes on two cores; make dist builds all four.
set -euo pipefail
cd "$(dirname "$0")/../.."
go=${GO:-go}
export CGO_ENABLED=0 # release builds are static (dist.sh); cgo would need a cross C compiler

for platform in ${PLATFORMS:-windows/amd64 darwin/arm64}; do
	os=${platform%/*} arch=${platform#*/}
	echo "crosscheck: vet and build GOOS=$os GOARCH=$arch"
	GOOS=$os GOARCH=$arch "$go" vet ./...
	GOOS=$os GOARCH=$arch "$go" build ./...
done
