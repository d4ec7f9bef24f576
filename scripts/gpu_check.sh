#!/usr/bin/env bash
# One-GPU check of the paper-scale path (benchmarks/gpu_check.py): ~9 minutes on one H200, no registry access there.
#
#   scripts/gpu_check.sh prepare     # on a connected machine: gpucheck/ (ignored by git) with the tokenizer and wheels, 30 MB
#   scripts/gpu_check.sh [run] [ARGS]  # on the GPU machine, with gpucheck/ carried beside the working tree
#                                      (set GPU_CHECK_COMMIT to the commit sent: a copied .git there may be stale)
#   scripts/gpu_check.sh dry [ARGS]  # the same steps on the CPU at tiny shapes (what tests/test_gpu_check.py runs)
#
# `run` installs into a temporary folder each carried wheel whose distribution is not installed, and each of sweet_rl's
# pins (PINNED) whose installed version differs, ahead of the machine's on PYTHONPATH (nothing installed is replaced:
# the last record ran transformers 5.17.0 against the pinned 5.23.0); it sets the Hugging Face libraries offline, and runs benchmarks/gpu_check.py under a 9-minute limit; the
# record, written step by step, is benchmarks/results/gpu_check_h200.json (also copied into $OUT when that is set).
# ARGS go to benchmarks/gpu_check.py, e.g. `--steps memory_probe,decode` to rerun two steps.
# vLLM is not carried (its wheels are 1.5 GB): the `candidates` step uses it when the machine has it, else transformers;
# tests/test_vllm.py needs a GPU node with registry access.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
CHECK=gpucheck
# What the training steps import beyond torch, transformers, accelerate and peft, small enough to carry (pyarrow,
# pandas and pillow are not: they are expected on the machine). DeepSpeed has no wheel on PyPI: built here, pure Python.
WHEELS="trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 xxhash==4.1.0 fastcore==1.14.5 hjson==3.1.0 msgpack==1.2.4
ninja==1.13.2 py-cpuinfo==9.0.0 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
einops==0.8.2 psutil==7.2.2"  # the versions of tests/fixtures/gpu_node_py312.inspect.json
DEEPSPEED=deepspeed==0.19.8
# sweet_rl's own pins (settings.ini) that a GPU image may hold at other versions, and the hub version transformers needs
PINNED="transformers==5.23.0 peft==0.21.2 tokenizers==0.23.3 huggingface-hub==2.4.0"
mode=${1:-run}; [ $# -gt 0 ] && shift

case "$mode" in
prepare)
  rm -rf "$CHECK"; mkdir -p "$CHECK/wheels" "$CHECK/tokenizer"
  "$PY" - "$CHECK/tokenizer" <<'EOF'
import shutil, sys
from pathlib import Path
from sweet_rl.base.models import resolve_model_path
src = resolve_model_path('smollm2-135m')  # config and tokenizer only: the random models are built from them
for f in src.iterdir():
    if f.name == 'config.json' or f.name.startswith(('tokenizer', 'special_tokens', 'chat_template', 'generation_config')):
        shutil.copy(f, Path(sys.argv[1]) / f.name)
EOF
  # the machine's Python (3.12) and glibc wheels; pure-Python wheels where there are any
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 \
    --abi none --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
    -d "$CHECK/wheels" $WHEELS $PINNED
  DS_BUILD_OPS=0 "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$CHECK/wheels" "$DEEPSPEED"
  du -sh "$CHECK"; ls "$CHECK/wheels"
  ;;
dry)
  exec "$PY" benchmarks/gpu_check.py --dry "$@"
  ;;
run)
  [ -d "$CHECK/wheels" ] || { echo "no $CHECK/wheels: run 'scripts/gpu_check.sh prepare' on a connected machine and carry $CHECK/" >&2; exit 2; }
  site=$(mktemp -d); carried=(); trap 'rm -rf "$site"' EXIT
  norm() { echo "$1" | tr 'A-Z-' 'a-z_'; }
  for whl in "$CHECK"/wheels/*.whl; do
    name=$(basename "$whl" | cut -d- -f1); version=$(basename "$whl" | cut -d- -f2)
    installed=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name" 2>/dev/null || true)
    pinned=""; for p in $PINNED; do [ "$(norm "${p%%==*}")" = "$(norm "$name")" ] && pinned=1; done
    if [ -z "$installed" ] || { [ -n "$pinned" ] && [ "$installed" != "$version" ]; }; then
      "$PY" -m pip install --quiet --no-index --no-deps --target "$site" "$whl" 2>/dev/null || "$PY" -m zipfile -e "$whl" "$site"
      carried+=("$name==$version${installed:+(over $installed)}")
    fi
  done
  export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}" GPU_CHECK_CARRIED="${carried[*]:-}"
  echo "[gpu_check] carried wheels installed: ${carried[*]:-none}" >&2
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PIP_NO_INDEX=1
  record=benchmarks/results/gpu_check_h200.json
  rc=0; timeout --kill-after=10 540 "$PY" benchmarks/gpu_check.py --json "$record" --tokenizer "$CHECK/tokenizer" "$@" || rc=$?
  if [ -n "${OUT:-}" ] && [ -f "$record" ]; then cp "$record" "$OUT/"; fi
  exit $rc
  ;;
*) echo "usage: scripts/gpu_check.sh {prepare|run|dry} [ARGS for benchmarks/gpu_check.py]" >&2; exit 2 ;;
esac
