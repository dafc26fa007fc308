#!/usr/bin/env bash
# Release builds (`make dist`): static binaries of fairgrid for Linux,
# Windows and macOS on amd64 and arm64, each stamped with its version and
# commit (`fairgrid version` prints them), each in an archive with the
# README, the documented configuration and the systemd units (.zip for
# Windows, .tar.gz elsewhere), and the SHA-256 sums of binaries and
# archives.
#
# Usage: internal/dist/dist.sh [OUTDIR]   (default dist/)
#
# VERSION and COMMIT override the stamps, which default to
# `git describe --tags --always --dirty` and `git rev-parse HEAD`. The
# builds are pure Go (CGO_ENABLED=0) and -trimpath, so the same commit and
# toolchain give the same bytes on any machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
go=${GO:-go}
out=${1:-dist}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
case "$version$commit" in
*[!A-Za-z0-9._+-]*) echo "dist: version $version or commit $commit holds characters unfit for a file name or -X" >&2; exit 1 ;;
esac

rm -rf "$out"
mkdir -p "$out"
platforms="linux/amd64 linux/arm64 windows/amd64 windows/arm64 darwin/amd64 darwin/arm64"
for p in $platforms; do
	os=${p%/*} arch=${p#*/} ext=
	[ "$os" = windows ] && ext=.exe
	bin="fairgrid-$version-$os-$arch$ext"
	echo "dist: $out/$bin"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$go" build -trimpath \
		-ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
		-o "$out/$bin" ./cmd/fairgrid
done

# The binary for this machine must print the stamps it was given.
host="$out/fairgrid-$version-$("$go" env GOHOSTOS)-$("$go" env GOHOSTARCH)"
[ "$("$go" env GOHOSTOS)" = windows ] && host="$host.exe"
if [ -x "$host" ]; then
	got=$("$host" version)
	case "$got" in
	"fairgrid $version commit $commit "*) echo "dist: $got" ;;
	*) echo "dist: $host prints \"$got\", want version $version and commit $commit" >&2; exit 1 ;;
	esac
fi

# One archive per platform: a folder named as the binary, holding it as
# fairgrid(.exe) beside what a user reads first and the files it runs with.
root=$PWD
for p in $platforms; do
	os=${p%/*} arch=${p#*/} ext=
	[ "$os" = windows ] && ext=.exe
	name="fairgrid-$version-$os-$arch"
	stage="$out/.stage/$name"
	mkdir -p "$stage/configs"
	cp "$out/$name$ext" "$stage/fairgrid$ext"
	cp README.md "$stage/"
	cp configs/fairgrid.toml configs/fairgrid.service configs/fairgrid-gateway.service configs/fairgrid-proxy.service configs/fairgrid-proxy.plist configs/fairgrid-proxy-task.xml configs/grafana-fairgrid.json "$stage/configs/"
	if [ "$os" = windows ] && command -v zip >/dev/null 2>&1; then
		(cd "$out/.stage" && zip -qr "$root/$out/$name.zip" "$name")
		echo "dist: $out/$name.zip"
	else
		tar -C "$out/.stage" -czf "$out/$name.tar.gz" "$name"
		echo "dist: $out/$name.tar.gz"
	fi
done
rm -rf "$out/.stage"

cd "$out"
if command -v sha256sum >/dev/null 2>&1; then
	sha256sum fairgrid-* >SHA256SUMS
else
	shasum -a 256 fairgrid-* >SHA256SUMS # macOS
fi
echo "dist: $out/SHA256SUMS"
