#!/usr/bin/env bash
# Installs what the build needs on Debian/Ubuntu. Idempotent: installs only what is missing.
# Checks for the CUDA toolkit and says clearly what is missing; the CLI and the tests build
# without a GPU, but the hook, the simulator and the examples need the toolkit's headers.
#   scripts/setup.sh             # what the build and the demo need
#   scripts/setup.sh --browser   # and the HTML page's browser tests' (chromium, Node, puppeteer-core)
set -euo pipefail
browser_tests=0
case "${1:-}" in
  --browser) browser_tests=1 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--browser]" >&2; exit 2 ;;
esac

packages=(cmake g++ make pkg-config libprotobuf-dev protobuf-compiler libzstd-dev zstd
          libcli11-dev libgtest-dev libcairo2-dev fonts-dejavu-core libbenchmark-dev
          libxml2-utils libxml2-dev python3 time libre2-dev libsqlite3-dev rapidjson-dev zlib1g-dev ccache)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: build dependencies present"
fi

# The HTML page's browser tests (tests/browser) and its benchmark (tests/bench/html): Debian's
# chromium, Node with npm (Debian's, unless a Node is there already: NodeSource's bundles npm
# and conflicts with Debian's npm package), and puppeteer-core as pinned in package-lock.json.
# Only with --browser: the demo never opens a browser, and chromium is most of a fresh setup.
browser_setup() {
browser=()
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed" || browser+=(chromium)
command -v node >/dev/null || browser+=(nodejs)
command -v npm >/dev/null || browser+=(npm)
if ((${#browser[@]})); then
  echo "setup: installing ${browser[*]} (browser tests)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${browser[@]}" >/dev/null
fi
browser_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
if [ ! -d "$browser_dir/node_modules/puppeteer-core" ] || [ "$browser_dir/package-lock.json" -nt "$browser_dir/node_modules" ]; then
  echo "setup: npm ci in tests/browser (puppeteer-core, pinned)"
  (cd "$browser_dir" && npm ci --no-audit --no-fund --loglevel=error) >/dev/null
  touch "$browser_dir/node_modules"
else
  echo "setup: browser test dependencies present"
fi
}
if ((browser_tests)); then browser_setup; fi

cuda_root="${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}"
if [ -x "$cuda_root/bin/nvcc" ] || command -v nvcc >/dev/null; then
  nvcc_bin="$(command -v nvcc || echo "$cuda_root/bin/nvcc")"
  echo "setup: CUDA toolkit: $("$nvcc_bin" --version | grep -o 'release [0-9.]*')"
  for h in cupti.h nccl.h nvtx3/nvToolsExt.h; do
    [ -f "$cuda_root/include/$h" ] || echo "setup: warning: $cuda_root/include/$h not found" >&2
  done
else
  echo "setup: CUDA toolkit not found (looked for nvcc on PATH and in $cuda_root)." >&2
  echo "setup: install it from NVIDIA's Debian/Ubuntu repository, or set CUDA_HOME." >&2
  echo "setup: without it only the CLI is built (-DGPUHOOK_BUILD_HOOK=OFF -DGPUHOOK_BUILD_EXAMPLES=OFF)." >&2
fi

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "setup: GPU: $(nvidia-smi -L | head -n1)"
else
  echo "setup: no GPU found: examples will run on the CPU simulator (tests/sim)"
fi
