"""Go/no-go of the clarify environment: does the packaged small agent pass clearly more tests when the request states
every slot than when it states none? Writes one row per answer, a per-family summary and a manifest.

    .venv/bin/python scripts/clarify_gonogo.py                      # 40 training tasks x 4 samples x 2 conditions
    .venv/bin/python scripts/clarify_gonogo.py --tasks 8 --samples 1 --out /tmp/gonogo   # a quick look
    .venv/bin/python scripts/clarify_gonogo.py --families filter_scores,average --out results/clarify/gonogo-2fam
"""
import argparse, json, statistics, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def summarize(rows:list) -> dict:
    "Mean tests passed per condition, overall, per family and by number of slots off their default, with task intervals."
    from sweet_rl.runs.evaluate import bootstrap_ci
    def per_task(cond, keep=lambda r: True):
        by = {}
        for r in rows:
            if r['condition'] == cond and keep(r): by.setdefault(r['task'], []).append(r['tests_passed'])
        return {k: statistics.fmean(v) for k, v in by.items()}
    def gap(keep=lambda r: True):
        s, h = per_task('stated', keep), per_task('hidden', keep)
        diffs = [s[k] - h[k] for k in s]
        if not diffs: return None
        return {'stated': round(statistics.fmean(s.values()), 3), 'hidden': round(statistics.fmean(h.values()), 3),
                'gap': [round(x, 3) for x in bootstrap_ci(diffs)], 'tasks': len(diffs)}
    return {'all': gap(), 'by_family': {f: gap(lambda r, f=f: r['family'] == f) for f in sorted({r['family'] for r in rows})},
            'by_non_default': {k: gap(lambda r, k=k: len(r['non_default']) == k) for k in (0, 1, 2)},
            'cut_answers': sum(r['cut'] for r in rows), 'answers': len(rows)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='qwen2.5-coder-0.5b'); ap.add_argument('--tasks', type=int, default=40)
    ap.add_argument('--samples', type=int, default=4); ap.add_argument('--max-new-tokens', type=int, default=200)
    ap.add_argument('--seed', type=int, default=0, help='sampling seed'); ap.add_argument('--batch-size', type=int, default=16)
    ap.add_argument('--task-seed', type=int, default=1, help='seed of the drawn training tasks')
    ap.add_argument('--families', default='', help='comma-separated family names (default: all)')
    ap.add_argument('--out', default=str(ROOT / 'results' / 'clarify' / 'gonogo'))
    a = ap.parse_args()
    from sweet_rl.base.core import atomic_write_text, seed_everything, write_manifest
    from sweet_rl.envs.clarify import generate_tasks, information_value
    from sweet_rl.base.models import TransformersBackend
    seed_everything(a.seed)
    out, t0 = Path(a.out), time.time()
    out.mkdir(parents=True, exist_ok=True)
    tasks = generate_tasks(a.tasks, seed=a.task_seed, split='train', families=[f for f in a.families.split(',') if f] or None)
    rows = information_value(TransformersBackend(a.model, batch_size=a.batch_size), tasks, a.samples, a.max_new_tokens, seed=a.seed)
    summary = {**summarize(rows), 'wall_s': round(time.time() - t0), 'params': vars(a)}
    atomic_write_text(out / 'gonogo_answers.jsonl', ''.join(json.dumps(r) + '\n' for r in rows))
    atomic_write_text(out / 'gonogo.json', json.dumps(summary, indent=1) + '\n')
    write_manifest(out, a.seed, script='scripts/clarify_gonogo.py')
    print(json.dumps(summary['all']), '| by family:', {f: v['gap'][0] for f, v in summary['by_family'].items()})


if __name__ == '__main__': main()
