#!/usr/bin/env bash
# The peer benchmark in one command (see bench/README.md):
#   bench/run.sh           full run: N = 150, 2,103, 10,000, 100,000; R = 5
#   bench/run.sh --quick   smoke run: N up to 10,000; R = 3; shorter verification loops
#   bench/run.sh --serve-only   only the terminator benchmark (bench/serve.py): tlskit serve
#                          vs nginx vs openssl s_server; writes bench/out/serve.{md,json}
# Builds what it needs (cargo release build of tlskit and tlskit-bench, cc for the C peers,
# go build for the Go peer), generates the data into bench/data/ (reused when present), runs
# every implementation one after another, then the terminator benchmark, and writes
# bench/out/results.{md,json} and bench/out/store_load.svg.
# Environment: TLSKIT=/path/to/tlskit uses that binary instead of building this tree's (and
# TLSKIT_PEER=/path/to/peer-tlskit likewise for the library peer); BENCH_LIMIT=seconds per
# measurement (default 90); CARGO_TARGET_DIR is respected.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=0
ONLY=all
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --serve-only) ONLY=serve ;;
    -h | --help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "run.sh: unknown argument: $arg (try --help)" >&2
      exit 2
      ;;
  esac
done

say() { printf '[bench] %s\n' "$*" >&2; }
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PEERS=$TARGET/bench-peers
mkdir -p "$PEERS"
missing=()

# --- Rust: data generator, rustls peer, tlskit ------------------------------------------
command -v cargo >/dev/null || { say "cargo not found: install Rust (rustup) first"; exit 2; }
say "building tlskit-bench (release)"
cargo build --release --quiet -p tlskit-bench --bins
# peer-tlskit needs the store crate's builder API; without it, that row reads n/a.
TLSKIT_GIVEN=${TLSKIT:-}
TLSKIT_PEER_GIVEN=${TLSKIT_PEER:-}
if [ -n "${TLSKIT_PEER:-}" ]; then
  say "using TLSKIT_PEER=$TLSKIT_PEER"
elif TLSKIT_PEER=$TARGET/release/peer-tlskit && cargo build --release --quiet -p tlskit-bench --features tlskit-store-api --bin peer-tlskit \
  >"$PEERS/peer-tlskit-build.log" 2>&1; then
  :
else
  rm -f "$TARGET/release/peer-tlskit"
  say "peer-tlskit does not build against this tree's tlskit-store (see $PEERS/peer-tlskit-build.log)"
  missing+=(--missing "tlskit-lib=peer-tlskit does not build against this tree's tlskit-store")
fi
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT with uncommitted changes"
if [ -n "${TLSKIT:-}" ]; then
  say "using TLSKIT=$TLSKIT"
  SOURCE="binary given as TLSKIT=$TLSKIT"
else
  SOURCE="built from this tree, commit $COMMIT"
  TLSKIT=$TARGET/release/tlskit
  say "building tlskit (release)"
  if ! cargo build --release --quiet -p tlskit; then
    say "tlskit does not build: its columns will read n/a"
    missing+=(--missing "tlskit=cargo build --release -p tlskit failed")
  fi
fi

# --- C peers ------------------------------------------------------------------------------
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null; then
  say "no C compiler ($CC): OpenSSL and GnuTLS peers are skipped (apt-get install gcc)"
  missing+=(--missing "openssl=no C compiler" --missing "gnutls=no C compiler")
else
  if [ -f /usr/include/openssl/x509_vfy.h ] || pkg-config --exists openssl 2>/dev/null; then
    $CC -O2 -Wall -o "$PEERS/openssl_peer" bench/peers/openssl_peer.c \
      $(pkg-config --cflags --libs openssl 2>/dev/null || echo -lcrypto)
  else
    say "OpenSSL headers missing: apt-get install libssl-dev"
    missing+=(--missing "openssl=libssl-dev not installed")
  fi
  if [ -f /usr/include/gnutls/x509.h ] || pkg-config --exists gnutls 2>/dev/null; then
    $CC -O2 -Wall -o "$PEERS/gnutls_peer" bench/peers/gnutls_peer.c \
      $(pkg-config --cflags --libs gnutls 2>/dev/null || echo -lgnutls)
  else
    say "GnuTLS headers missing: apt-get install libgnutls28-dev"
    missing+=(--missing "gnutls=libgnutls28-dev not installed")
  fi
fi

# --- Go peer (standard library only; no network) -------------------------------------------
if command -v go >/dev/null; then
  (cd bench/peers/go && GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off \
    go build -o "$PEERS/go-peer" .)
else
  say "go not found: the Go peer is skipped (install Go from https://go.dev/dl)"
  missing+=(--missing "go=go toolchain not installed")
fi

# --- data ---------------------------------------------------------------------------------
if [ "$QUICK" = 1 ]; then
  NS=150,2103,10000
  opts=(--reps 3 --reps-max-n 3 --iters 1000 --verify-budget 1 --quick)
else
  NS=150,2103,10000,100000
  opts=(--reps 5 --reps-max-n 3 --iters 2000 --verify-budget 2)
fi
DATA=$ROOT/bench/data
if python3 - "$DATA/manifest.json" "$NS" <<'EOF'; then
import json, sys, time
try:
    m = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(1)
want = {int(x) for x in sys.argv[2].split(",")}
# Reuse when every N is there and the certificates stay valid for at least 30 more days.
sys.exit(0 if want <= set(m.get("ns", [])) and m.get("not_after", 0) > time.time() + 30 * 86400 else 1)
EOF
  say "reusing the data in bench/data (delete it to regenerate)"
else
  say "generating data for N = $NS into bench/data"
  "$TARGET/release/bench-gen" "$DATA" "$NS"
fi

# --- run ------------------------------------------------------------------------------------
CMD="bench/run.sh${1:+ $*}"
[ -n "${BENCH_LIMIT:-}" ] && CMD="BENCH_LIMIT=$BENCH_LIMIT $CMD"
[ -n "${TLSKIT_PEER_GIVEN:-}" ] && CMD="TLSKIT_PEER=$TLSKIT_PEER $CMD"
[ -n "${TLSKIT_GIVEN:-}" ] && CMD="TLSKIT=$TLSKIT $CMD"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
python3 bench/harness.py --data "$DATA" --out "$ROOT/bench/out" --ns "$NS" \
  --only "$ONLY" --serve-tls-load "$TARGET/release/tls-load" --serve-nginx "$NGINX" \
  --peer-dir "$PEERS" --rustls-peer "$TARGET/release/peer-rustls" --tlskit "$TLSKIT" \
  --tlskit-peer "$TLSKIT_PEER" --tlskit-source "$SOURCE" \
  --limit "${BENCH_LIMIT:-90}" --command "$CMD" "${opts[@]}" ${missing[@]+"${missing[@]}"}
[ "$ONLY" = serve ] && { say "results: bench/out/serve.md (raw numbers in bench/out/serve.json)"; exit 0; }
say "results: bench/out/results.md (raw numbers in bench/out/results.json, plot bench/out/store_load.svg)"
