"""Make a clarify credit study's shared data ahead of its scorer runs, one part per process (two cores: run both at once).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/credit_data.py offline &    # the behaviour policy's training episodes
    OMP_NUM_THREADS=1 .venv/bin/python scripts/credit_data.py heldout      # held-out states and their Monte-Carlo values

Both resume where an interrupted run stopped, and `nbs/credit.ipynb` finds what they made (`runs/shared/`). Any field of
`credit.ClarifyCreditConfig` can be given as `--field value`; the defaults are the notebook's.
"""
import argparse, dataclasses, json, time


def main():
    from sweet_rl.runs.credit import ClarifyCreditConfig, clarify_heldout, clarify_offline, credit_metrics, label_agreement
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('part', choices=['offline', 'heldout'])
    ap.add_argument('--runs-dir', default=None, help='root of the run folders (default: runs/ of the repository)')
    for f in dataclasses.fields(ClarifyCreditConfig):
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    a = vars(ap.parse_args())
    part, runs_dir = a.pop('part'), a.pop('runs_dir')
    config, t0 = ClarifyCreditConfig(**a), time.time()
    if part == 'offline':
        records, folder = clarify_offline(config, runs_dir=runs_dir)
        print(json.dumps({'episodes': len(records), 'mean_reward': sum(r['reward'] for r in records) / len(records),
                          'folder': str(folder), 'wall_s': round(time.time() - t0)}))
    else:
        states, values, folders = clarify_heldout(config, runs_dir=runs_dir)
        by_kind = credit_metrics(states, values)['by_kind']  # the values' mean by kind of candidate, as a scorer's scores are summarized
        agree = label_agreement(states, values, seed=config.data_seed)
        print(json.dumps({'states': len(states), 'candidates': sum(len(s['candidates']) for s in states),
                          'label_agreement': {k: v['agreement'] for k, v in agree.items()},
                          'value_by_kind': {k: [round(v['mean'], 3), v['n']] for k, v in by_kind.items()},
                          'folders': {k: str(v) for k, v in folders.items()}, 'wall_s': round(time.time() - t0)}, indent=1))


if __name__ == '__main__': main()
