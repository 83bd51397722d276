#!/bin/bash
# What a workspace's setup costs per attempt (issue 36): `npm ci` of a small project of N
# tiny packages (made here with `npm pack`; no network), cold (an empty npm cache, the
# packages read from a local mirror of tarballs) and from npm's cache (`--offline`), then a
# whole commission through guild-hall with and without that setup (confined, the cache in the
# package's sandbox.write). Medians of RUNS runs.
#   benches/workspace_setup.sh target/debug/guild-hall [N] [RUNS]
set -eu
BIN=$(realpath "$1"); N=${2:-30}; RUNS=${3:-7}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m/1e6}'; }

# The packages and their tarballs (the "registry"), and the npm cache holding them.
mkdir -p "$T/mirror" "$T/src"
deps=""; lock_reg=""; lock_file=""
for i in $(seq 1 "$N"); do
  d="$T/src/dep$i"; mkdir -p "$d"
  printf '{"name": "dep%s", "version": "1.0.0", "main": "index.js"}\n' "$i" > "$d/package.json"
  for f in $(seq 1 20); do printf 'module.exports.f%s = () => %s;\n' "$f" "$i" >> "$d/index.js"; done
  (cd "$d" && npm pack --silent --pack-destination "$T/mirror" >/dev/null)
  tgz="$T/mirror/dep$i-1.0.0.tgz"
  integ="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  deps="$deps${deps:+, }\"dep$i\": \"1.0.0\""
  lock_reg="$lock_reg, \"node_modules/dep$i\": {\"version\": \"1.0.0\", \"resolved\": \"https://registry.npmjs.org/dep$i/-/dep$i-1.0.0.tgz\", \"integrity\": \"$integ\"}"
  lock_file="$lock_file, \"node_modules/dep$i\": {\"version\": \"1.0.0\", \"resolved\": \"file:$tgz\", \"integrity\": \"$integ\"}"
done
app() { # app DIR LOCK_ENTRIES
  mkdir -p "$1"
  printf '{"name": "app", "version": "1.0.0", "dependencies": {%s}}\n' "$deps" > "$1/package.json"
  printf '{"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "app", "version": "1.0.0", "dependencies": {%s}}%s}}\n' "$deps" "$2" > "$1/package-lock.json"
}
CACHE=$T/npm-cache
npm_config_cache=$CACHE npm cache add "$T"/mirror/*.tgz >/dev/null 2>&1

# 1. npm ci alone.
app "$T/cold" "$lock_file"; app "$T/warm" "$lock_reg"
cold=(); warm=()
for _ in $(seq 1 "$RUNS"); do
  rm -rf "$T/cold/node_modules" "$T/empty-cache"
  t0=$(now); (cd "$T/cold" && npm_config_cache=$T/empty-cache npm ci >/dev/null 2>&1); cold+=($(( $(now) - t0 )))
  rm -rf "$T/warm/node_modules"
  t0=$(now); (cd "$T/warm" && npm_config_cache=$CACHE npm ci --offline >/dev/null 2>&1); warm+=($(( $(now) - t0 )))
done
echo "npm ci, $N packages, cold (empty cache, local tarballs): $(printf '%s\n' "${cold[@]}" | median) ms"
echo "npm ci --offline, $N packages, from npm's cache:        $(printf '%s\n' "${warm[@]}" | median) ms"

# 2. A whole commission, with and without the setup.
source "$(dirname "$(realpath "$0")")/project.sh"
bench_project "$BIN" "$T"
app . "$lock_reg"; printf 'node_modules/\n' > .gitignore
git add -A && git commit -qm app && "$BIN" sync >/dev/null
for w in plain setup; do
  mkdir -p ".lore/workers/$w"
  printf 'name: %s\ncommand: ["./run.sh"]\ncheckout: full\ncapabilities: [commission]\nenv: {npm_config_cache: "%s"}\nsandbox: {write: ["%s"]}\n' "$w" "$CACHE" "$CACHE" > ".lore/workers/$w/worker.yaml"
  printf '#!/bin/sh\n"$GUILD_HALL_BIN" toolbox submit-result --summary done\n' > ".lore/workers/$w/run.sh"
  chmod +x ".lore/workers/$w/run.sh"
done
printf 'workspace:\n  setup: [[npm, ci, --offline]]\n' >> .lore/workers/setup/worker.yaml
plain=(); setup=()
for i in $(seq 1 "$RUNS"); do
  for w in plain setup; do
    printf -- '---\nworker: %s\n---\nGo.\n' "$w" > ".lore/commissions/$w-$i.md"
    sync
    t0=$(now); "$BIN" reconcile --once --wait --timeout 120s >/dev/null; d=$(( $(now) - t0 ))
    grep -q 'status: completed' ".lore/commissions/$w-$i.md" || { echo "$w-$i did not complete"; cat ".lore/commissions/$w-$i.md"; exit 1; }
    if [ $w = plain ]; then plain+=($d); else setup+=($d); fi
  done
done
echo "a whole commission, no setup:                          $(printf '%s\n' "${plain[@]}" | median) ms"
echo "a whole commission, setup npm ci --offline (confined):  $(printf '%s\n' "${setup[@]}" | median) ms"
