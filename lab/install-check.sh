#!/usr/bin/env bash
# lab/install-check.sh: the one-line install of docs/install.md from empty
# caches, and two release builds from empty caches compared byte for byte.
#
# Usage: lab/install-check.sh [REV]   (default HEAD; run from the repository root)
#
#  1. Serves REV as a pseudo-version of the module from a module proxy in a
#     temporary folder (a file:// GOPROXY in front of the usual one, which
#     still serves the dependencies), so the documented command itself,
#     `go install MODULE/cmd/...@latest`, runs as on a machine that has never
#     built stampede: empty GOMODCACHE, empty GOCACHE. Timed.
#  2. Runs the installed `stampede version` and
#     `stampede run --clients 100 --duration 3s`.
#  3. Clones REV twice into two folders (different paths, so a leaked path
#     shows), builds each with `make release` from its own empty GOMODCACHE
#     and GOCACHE, timed, and compares every binary byte for byte.
#
# Exit 1 when a step fails or the release builds differ. Every build is
# cold: on 2 shared cores this takes several minutes a build, so on a
# shared machine hold the heavy-run lock (lab/README.md). The summary lines
# at the end are what docs/measurements.md records.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
rev=$(git -C "$root" rev-parse "${1:-HEAD}")
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-modcacherw # so the temporary module caches can be removed
report=()
say() { echo "install-check: $*" >&2; report+=("$*"); }

# The dependencies come from the proxy `go env GOPROXY` names; "direct"
# and "off" are left out, so a module path that no proxy knows fails at
# once instead of trying git.
upstream=$(go env GOPROXY | tr ',|' '\n\n' | grep -v -e '^direct$' -e '^off$' -e '^$' | paste -sd, -) || true
if [ -z "$upstream" ]; then
	echo "install-check: go env GOPROXY names no module proxy (got \"$(go env GOPROXY)\"); set GOPROXY to one" >&2
	exit 1
fi

# serve writes REV as a module zip, .mod, .info and @latest into a file
# proxy under $work/proxy, and prints the module path and the version.
serve() {
	local src=$work/src
	git clone -q "$root" "$src"
	git -C "$src" checkout -q --detach "$rev"
	local module version stamp
	module=$(awk '$1 == "module" {print $2; exit}' "$src/go.mod")
	stamp=$(TZ=UTC git -C "$src" log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
	version=v0.0.0-$stamp-$(git -C "$src" rev-parse --short=12 HEAD)
	local dir=$work/proxy/$module/@v tree=$work/zip/$module@$version
	mkdir -p "$dir" "$tree"
	git -C "$src" archive --format=tar HEAD | tar -x -C "$tree"
	# Nested modules (deploy/kubernetes, lab, lab/otelcol) are not part of it.
	find "$tree" -mindepth 2 -name go.mod -printf '%h\n' | xargs -r rm -rf
	(cd "$work/zip" && find . -type l -delete && zip -q -r -X "$dir/$version.zip" "$module@$version")
	cp "$src/go.mod" "$dir/$version.mod"
	local time
	time=$(TZ=UTC git -C "$src" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
	printf '{"Version":"%s","Time":"%s"}\n' "$version" "$time" >"$dir/$version.info"
	cp "$dir/$version.info" "$work/proxy/$module/@latest"
	: >"$dir/list"
	echo "$module $version"
}

read -r module version < <(serve)
say "rev $(git -C "$root" rev-parse --short=12 "$rev") served as $module@$version"

# 1. The one line, from empty caches.
mkdir -p "$work/gobin"
start=$SECONDS
GOPROXY="file://$work/proxy,$upstream" GONOSUMDB=$module GOMODCACHE=$work/mod-install \
	GOCACHE=$work/cache-install GOBIN=$work/gobin go install "$module/cmd/...@latest"
say "go install $module/cmd/...@latest from empty caches: $((SECONDS - start)) s"
ls "$work/gobin"

# 2. The installed binary works.
"$work/gobin/stampede" version | tee "$work/version.txt"
say "stampede version: $(paste -sd' ' "$work/version.txt")"
start=$SECONDS
(cd "$work" && "$work/gobin/stampede" run --clients 100 --duration 3s --out first-run)
test -s "$work/first-run/summary.json"
say "stampede run --clients 100 --duration 3s: exit 0, summary.json written, $((SECONDS - start)) s"

# 3. Two release builds, each from its own empty caches.
release() { # release NAME
	local dir=$work/$1
	git clone -q "$root" "$dir/src"
	git -C "$dir/src" checkout -q --detach "$rev"
	local start=$SECONDS
	GOMODCACHE=$dir/mod GOCACHE=$dir/cache make -s -C "$dir/src" release RELEASE_DIR="$dir/bin" >/dev/null
	say "make release $1 from empty caches: $((SECONDS - start)) s"
}
release a
release b
status=0
for f in "$work"/a/bin/*; do
	name=$(basename "$f")
	if cmp -s "$f" "$work/b/bin/$name"; then
		say "$name: identical, $(stat -c %s "$f") bytes, sha256 $(sha256sum <"$f" | cut -c1-16)"
	else
		say "$name: DIFFERS between the two release builds"
		status=1
	fi
done
printf '%s\n' "${report[@]}"
exit "$status"
