#!/usr/bin/env bash
# Cross-platform check, part of `make test`: every package and its tests
# compile for Windows and macOS, so a Linux-only call that slips into
# portable code shows in CI. `go vet` type-checks the tests too, for one
# architecture per OS (the code has no architecture-specific files, and vet
# costs most); `go build` compiles everything for amd64 and arm64.
# Raw sockets and AF_PACKET stay Linux-only behind build tags
# (capture/live_*.go, throttle/rawsend_*.go).
#
# Usage: internal/dist/crosscheck.sh   (GO selects the go tool; ARCHS the
# architectures built, "amd64 arm64" by default)
#
# With a warm build cache it takes seconds. On a new machine it compiles
# the standard library and the dependencies once per OS and architecture,
# minutes on two cores: ARCHS=amd64 halves that.
set -euo pipefail
cd "$(dirname "$0")/../.."
go=${GO:-go}
export CGO_ENABLED=0 # release builds are static (dist.sh); cgo would need a cross C compiler

for os in windows darwin; do
	echo "crosscheck: vet GOOS=$os GOARCH=amd64"
	GOOS=$os GOARCH=amd64 "$go" vet ./...
	for arch in ${ARCHS:-amd64 arm64}; do
		echo "crosscheck: build GOOS=$os GOARCH=$arch"
		GOOS=$os GOARCH=$arch "$go" build ./...
	done
done
