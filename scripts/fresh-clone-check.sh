#!/usr/bin/env bash
# The path of a newcomer on a fresh clone: the committed HEAD cloned into a
# temporary directory, the bootstrap's install and build steps run there with
# NODE_ENV=production (what many self-hosters set before npm start), and then
# the clone's work tree must be as it was cloned (git status --porcelain empty).
# The temporary directory is removed at the end, whatever happened.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/pagescript-fresh-clone.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
clone="$tmp/pagescript"

# HEAD of this checkout (a worktree's or a detached one too), not the default branch.
git clone --quiet --no-checkout "$repo" "$clone"
git -C "$clone" fetch --quiet "$repo" HEAD
git -C "$clone" checkout --quiet --detach FETCH_HEAD
echo "[fresh clone] $(git -C "$clone" log -1 --format='%h %s') in $clone" >&2

# The bootstrap's steps for `npm start` up to the build (Node 24 into .runtime/,
# npm ci, the service users as root, tsup), without starting the service.
(cd "$clone" && NODE_ENV=production node scripts/bootstrap.mjs build)

dirty="$(git -C "$clone" status --porcelain)"
if [ -n "$dirty" ]; then
  echo "[fresh clone] error: install and build left the work tree changed:" >&2
  echo "$dirty" >&2
  git -C "$clone" diff --stat >&2
  exit 1
fi
echo "[fresh clone] installed and built with NODE_ENV=production; the work tree is clean" >&2
