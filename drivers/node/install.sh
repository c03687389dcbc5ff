#!/bin/sh
# install.sh <version> <dir> [xds]: install @grpc/grpc-js@<version> for the
# conform grpc-js driver into <dir> (an npm prefix, normally
# <cache>/grpc-js@<version>). With "xds", @grpc/grpc-js-xds of the same minor
# release (~<major>.<minor>) is installed beside it (normally into
# <cache>/grpc-js-xds@<version>), for xDS scenarios.
#
# Afterwards <dir>/node_modules/@grpc/grpc-js is the package; start the driver with
#   node drivers/node/driver.js --grpc-js <dir>
# On success the last line on stdout is the installed version. Idempotent: an
# existing complete install of the same version is kept. The install happens in
# a sibling temporary directory and is renamed into place, so <dir> is either
# absent or complete. Package install scripts are not run (--ignore-scripts):
# grpc-js needs none.
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ] || { [ $# -eq 3 ] && [ "$3" != xds ]; }; then
	echo "usage: $0 <version> <dir> [xds]" >&2
	exit 2
fi
version=$1
dir=$2
xds=${3:-}

case $version in
'' | *[!A-Za-z0-9.+-]*)
	echo "install.sh: bad version '$version' (want e.g. 1.14.7)" >&2
	exit 2
	;;
esac
command -v node >/dev/null 2>&1 || { echo "install.sh: node not found in PATH (install Node.js >= 18)" >&2; exit 3; }
command -v npm >/dev/null 2>&1 || { echo "install.sh: npm not found in PATH (install npm)" >&2; exit 3; }

installed_version() {
	node -e 'try{process.stdout.write(String(require(process.argv[1]).version))}catch(e){process.exit(1)}' \
		"$1/node_modules/@grpc/grpc-js/package.json" 2>/dev/null || return 1
	if [ -n "$xds" ]; then
		[ -f "$1/node_modules/@grpc/grpc-js-xds/package.json" ] || return 1
	fi
}

# The packages to install: grpc-js, and grpc-js-xds of its minor release
# (grpc-js-xds releases follow grpc-js's and peer-depend on the same minor).
packages="@grpc/grpc-js@$version"
if [ -n "$xds" ]; then
	case $version in
	[0-9]*.[0-9]*.*) minor=${version%.*} ;;
	*)
		echo "install.sh: xds needs an exact grpc-js version (e.g. 1.14.7), not '$version'" >&2
		exit 2
		;;
	esac
	packages="$packages @grpc/grpc-js-xds@~$minor"
fi

if have=$(installed_version "$dir") && [ -f "$dir/.conform-complete" ]; then
	case $version in
	*[!0-9.]*) ;; # a tag or range: reinstall is not attempted, keep what is there
	*)
		if [ "$have" != "$version" ]; then
			echo "install.sh: $dir holds @grpc/grpc-js $have, not $version" >&2
			exit 4
		fi
		;;
	esac
	echo "$have"
	exit 0
fi

parent=$(dirname -- "$dir")
mkdir -p -- "$parent"
tmp=$(mktemp -d "$parent/.grpc-js-install.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT INT TERM HUP

# npm's own output goes to stderr: stdout is for the result only.
# shellcheck disable=SC2086 # $packages is a list of words
npm install --no-audit --no-fund --ignore-scripts --no-save --prefix "$tmp" $packages >&2

have=$(installed_version "$tmp") || { echo "install.sh: npm finished but $tmp lacks $packages" >&2; exit 5; }
touch "$tmp/.conform-complete"
chmod 755 "$tmp"
# Another install may have finished meanwhile: keep the first complete one.
if [ -f "$dir/.conform-complete" ] && other=$(installed_version "$dir"); then
	echo "$other"
	exit 0
fi
rm -rf -- "$dir"
if ! mv -T -- "$tmp" "$dir" 2>/dev/null; then
	if [ -f "$dir/.conform-complete" ] && other=$(installed_version "$dir"); then
		echo "$other"
		exit 0
	fi
	echo "install.sh: cannot move the install into $dir" >&2
	exit 5
fi
trap - EXIT INT TERM HUP
echo "$have"
