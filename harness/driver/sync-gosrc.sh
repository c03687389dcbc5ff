#!/bin/sh
# Copies the Go driver's sources (drivers/go, its own module) into _gosrc,
# which conform embeds so that it can build the driver from any directory.
# go.mod files become go.mod.txt: go:embed refuses another module's files.
# TestEmbeddedGoSource_MatchesDriversGo fails when the copy is stale.
set -eu
cd "$(dirname "$0")"
rm -rf _gosrc
src=../../drivers/go
(cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | sort) | while read -r f; do
	mkdir -p "_gosrc/$(dirname "$f")"
	cp "$src/$f" "_gosrc/$f"
done
find _gosrc -name go.mod -exec sh -c 'mv "$1" "$1.txt"' _ {} \;
