#!/usr/bin/env bash
# The main command: set-up, then nbs/quickstart.ipynb. A SWEET-RL critic and a value-function critic, trained alike on
# scripted offline data of 20 bundled backend tasks, judge pairs of rollouts of 20 tasks neither has seen; it prints
# their held-out accuracy with 95% intervals next to chance, and one held-out episode as a chat.
# Output: runs/smoke/ (summary.md, episode.txt, quickstart.png, metrics.json, the executed notebook, the critics' runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
out=runs/smoke
mkdir -p "$out"
papermill nbs/quickstart.ipynb "$out/quickstart.ipynb" --cwd nbs -p out_dir "$PWD/$out" -p n_tasks 40 -p max_steps 32 "$@"
echo; cat "$out/summary.md"; echo; cat "$out/episode.txt"
echo; echo "The notebook with its plot and the episode as a chat: $out/quickstart.ipynb"
