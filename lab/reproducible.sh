#!/usr/bin/env bash
# lab/reproducible.sh: check that `make release` gives the same bytes twice.
#
# Usage: lab/reproducible.sh [REV]   (default HEAD; run from the repository root)
#
# Clones REV twice into two temporary folders (different paths, so a path
# that leaked into a binary would show), builds each with `make release`,
# the second with an empty Go build cache so nothing is shared but the
# module cache and the toolchain, and prints the sha256 of every binary of
# both. Exit 1 when any differs. The second build compiles everything: a
# few minutes on a busy machine. SHARED_CACHE=1 builds both with the usual
# cache (quicker: it then checks that neither the path nor the link step
# changes the bytes, not the compiler).
set -euo pipefail
rev=${1:-HEAD}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

build() { # build NAME [GOCACHE]
	local dir=$work/$1
	git clone -q "$root" "$dir/src"
	git -C "$dir/src" checkout -q --detach "$rev"
	local start=$SECONDS
	if [ -n "${2:-}" ]; then
		GOCACHE=$2 make -s -C "$dir/src" release RELEASE_DIR="$dir/bin" >/dev/null
	else
		make -s -C "$dir/src" release RELEASE_DIR="$dir/bin" >/dev/null
	fi
	echo "build $1: $((SECONDS - start))s" >&2
}

build a
if [ "${SHARED_CACHE:-0}" = 1 ]; then
	build b
else
	mkdir "$work/cache"
	build b "$work/cache"
fi

status=0
for f in "$work"/a/bin/*; do
	name=$(basename "$f")
	ha=$(sha256sum <"$f" | cut -d' ' -f1)
	hb=$(sha256sum <"$work/b/bin/$name" | cut -d' ' -f1)
	printf '%-16s %s\n%-16s %s\n' "$name" "$ha" "" "$hb"
	if [ "$ha" != "$hb" ]; then
		echo "reproducible: $name differs between the two builds" >&2
		status=1
	fi
done
[ "$status" = 0 ] && echo "reproducible: $(git -C "$root" rev-parse --short "$rev"): identical"
exit "$status"
