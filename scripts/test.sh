#!/usr/bin/env bash
# The test command: set-up, notebooks/package in sync, every notebook under nbdev_test, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The time each part took, printed when the command ends (also when a part fails): CI's budget is 45 minutes.
parts=(); part_start=$SECONDS
# With each part, the disk space left where the checkout lies: one CI run stopped on "No space left on device".
disk_free() { df -Pk . | awk 'NR==2 {printf "%.1f GiB free", $4 / 1048576}'; }
part() { parts+=("$(printf '%-34s %5d s   %s' "$1" $((SECONDS - part_start)) "$(disk_free)")"); part_start=$SECONDS; }
report() { echo "== time by part"; for p in "${parts[@]}"; do echo "   $p"; done; echo "   total $SECONDS s"; }
trap report EXIT
echo "disk at the start: $(disk_free)"
bash scripts/setup.sh
part "set-up"
export PATH="$PWD/.venv/bin:$PATH"

# 1. nbdev_clean and nbdev_export must not change the tree: the exported package and clean notebooks are committed.
snapshot() { find nbs sweet_rl -type f -not -path '*/__pycache__/*' -not -path '*/.ipynb_checkpoints/*' -print0 | sort -z | xargs -0 sha256sum; }
before=$(snapshot)
nbdev_clean
nbdev_export
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "FAIL: nbdev_export / nbdev_clean changed files; run them and commit the result:"
  diff <(echo "$before") <(echo "$after") || true
  exit 1
fi

# Library notebooks are committed with their executed outputs (what a reader sees in JupyterLab or on GitHub).
python scripts/notebook_outputs.py --check
part "export, clean, outputs in sync"

# Committed paper outputs: no test may change them (pytest checks its own session too, in tests/conftest.py).
# (only the folders that exist: find exits non-zero on a missing one, which set -e -o pipefail turns into a silent exit)
outputs() { local d=(); for x in figures results; do [ -d "$x" ] && d+=("$x"); done; [ ${#d[@]} -eq 0 ] || find "${d[@]}" -type f -print0 | sort -z | xargs -0 -r sha256sum; }
committed=$(outputs)

# 2. Every notebook under nbdev_test, including cells flagged slow (GPU-only cells are skipped on CPU machines).
flags="slow"
python -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && flags="slow gpu"
# Each notebook is its own `nbdev_test --path` process (its memory goes back when it ends), two at a time, longest
# first; one torch thread each keeps two training notebooks from oversubscribing a 2-core machine (2 x 2 spinning
# OpenMP threads ran several times slower). Times and peak memory per notebook are printed as they end.
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" python scripts/run_notebooks.py --flags "$flags"
part "notebooks (nbdev_test)"

# 3. Library tests (they include re-rendering the committed figures from the committed results, byte for byte).
# Two pytest workers (pytest-xdist), one torch thread each: the tests are mostly small single-threaded models.
# Disk: a passing test's tmp_path goes when it ends (retention policy "failed"; the training tests write checkpoints),
# and whatever code under test writes with `tempfile` lands in a folder of this run's, removed after.
scratch=$(mktemp -d)
TMPDIR="$scratch" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" python -m pytest tests/ -q -n "${PYTEST_WORKERS:-2}" --dist worksteal \
  --durations=15 -o tmp_path_retention_policy=failed -o tmp_path_retention_count=1
rm -rf "$scratch"
part "pytest"

# 4. The tests left figures/ and results/ as committed, and docs/results.md shows what figures/ holds.
[ "$committed" = "$(outputs)" ] || { echo "FAIL: tests changed figures/ or results/"; exit 1; }
python -m sweet_rl.runs.pipeline results-page --check
part "committed outputs unchanged"
