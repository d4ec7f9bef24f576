"""Run a grid of the credit testbed study (studies/credit-testbed/PLAN.md): scorers x seeds, resumable, N at a time.

    python scripts/credit_study.py OUT --scorers control,sweet --seeds 0-9 [--set steps=250 batch_size=8 lora=false] [--jobs 2]
    python scripts/credit_study.py OUT --summary           # the table over every finished run in OUT

Each run is `testbed_credit_run(TestbedCreditConfig(scorer=..., seed=..., **set))` in its own process (one torch thread;
memory goes back when it ends) into OUT/<scorer>-<construction>-s<seed>; a folder with metrics.json is finished and
skipped, so an interrupted grid resumes where it stopped. The micro backbone is trained once, under OUT/runs.
"""
import argparse, json, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sweet_rl.runs.credit_study import TestbedCreditConfig, study_table

def seeds(spec:str) -> list[int]:
    out = []
    for part in spec.split(','):
        a, _, b = part.partition('-')
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out

def value(text:str):
    low = text.lower()
    if low in ('true', 'false'): return low == 'true'
    for cast in (int, float):
        try: return cast(text)
        except ValueError: pass
    return text

RUN = """
import json, sys
from sweet_rl.runs.credit_study import TestbedCreditConfig, testbed_credit_run
cfg, out, runs = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
testbed_credit_run(TestbedCreditConfig(**cfg), out, runs_dir=runs, progress=False)
"""

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out', type=Path)
    ap.add_argument('--scorers', default='control')
    ap.add_argument('--seeds', default='0-9')
    ap.add_argument('--set', nargs='*', default=[], metavar='FIELD=VALUE', help='TestbedCreditConfig fields for every run')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--summary', action='store_true', help='print the table of the finished runs and exit')
    a = ap.parse_args()
    if a.summary:
        print(study_table(a.out)); return
    fields = dict(kv.split('=', 1) for kv in a.set)
    fields = {k: value(v) for k, v in fields.items()}
    grid = []
    for scorer in a.scorers.split(','):
        for s in seeds(a.seeds):
            cfg = TestbedCreditConfig(scorer=scorer, seed=s, **fields)  # checks every field before anything runs
            grid.append((cfg, a.out / f"{scorer}-{cfg.construction}-s{s}"))
    todo = [(c, d) for c, d in grid if not (d / 'metrics.json').exists()]
    print(f"{len(grid)} runs, {len(grid) - len(todo)} finished, {len(todo)} to go, {a.jobs} at a time", flush=True)
    runs = a.out / 'runs'
    env = {**os.environ, 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')}
    def one(item):
        cfg, d = item
        t0 = time.time()
        r = subprocess.run([sys.executable, '-c', RUN, json.dumps(cfg.to_dict()), str(d), str(runs)], env=env,
                           capture_output=True, text=True)
        if r.returncode:
            (d / 'error.txt').parent.mkdir(parents=True, exist_ok=True)
            (d / 'error.txt').write_text(r.stdout[-5000:] + r.stderr[-20000:])
            return f"FAILED {d.name} after {time.time() - t0:.0f} s: see {d / 'error.txt'}"
        m = json.loads((d / 'metrics.json').read_text())['test']['info_gated']
        return f"{d.name}: {m['mean']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] in {time.time() - t0:.0f} s"
    if todo: print(one(todo[0]), flush=True)  # alone: it trains the shared backbone that the others then read
    with ThreadPoolExecutor(a.jobs) as pool:
        for line in pool.map(one, todo[1:]): print(line, flush=True)
    print(study_table(a.out))

if __name__ == '__main__':
    main()
