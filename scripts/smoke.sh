#!/usr/bin/env bash
# The main command: set-up, then nbs/quickstart.ipynb at its defaults. On the clarify environment, SWEET-RL critics
# with and without training-time information and a value head, trained alike on scripted episodes, rank two questions
# at the first turn of held-out tasks where only the hidden reference says which one matters (info-gated pairs); it
# prints their accuracy with 95% intervals next to a training-free privileged scorer and chance, the same read against
# each family's all-default twin (does a score move with the reference at all?), and one held-out state.
# Output: runs/smoke/ (summary.md, episode.txt, quickstart.png, metrics.json, the executed notebook, the critics).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
out=runs/smoke
mkdir -p "$out"
papermill nbs/quickstart.ipynb "$out/quickstart.ipynb" --cwd nbs -p out_dir "$PWD/$out" "$@"
echo; cat "$out/summary.md"; echo; cat "$out/episode.txt"
echo; echo "The notebook with its plot and the held-out state: $out/quickstart.ipynb"
echo "Wall time, set-up included: $(( $(date +%s) - start )) s"
