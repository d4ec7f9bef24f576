"""How often each critic a study trained picks, at a training state, the same best candidate as SWEET-RL's critic
(`sweet_rl.runs.evaluate.critic_choices`): the check behind docs/results.md's reading of Table 3's ablations.

    python scripts/critic_choices.py                          # the committed results (results/runs)
    python scripts/critic_choices.py --runs-dir /path/to/runs # a study's runs folder
"""
import argparse
from pathlib import Path

from sweet_rl.runs.evaluate import critic_choices
from sweet_rl.runs.pipeline import ARCHIVE_DIR

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs-dir', type=Path, default=ARCHIVE_DIR, help='runs folder or archive (default: results/runs)')
    table = critic_choices(ap.parse_args().runs_dir)
    print(table.to_string(index=False) if len(table) else 'no shared scores stores')
