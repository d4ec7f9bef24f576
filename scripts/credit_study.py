"""Run a grid of the credit testbed study (studies/credit-testbed/PLAN.md): scorers x seeds, resumable, N at a time.

    python scripts/credit_study.py OUT --scorers control,sweet --seeds 0-9 [--set steps=250 batch_size=8 lora=false] [--jobs 2]
    python scripts/credit_study.py OUT --summary           # the table over every finished run in OUT

Each run is `testbed_credit_run(TestbedCreditConfig(scorer=..., seed=..., **set))` in its own process (one torch thread)
into OUT/<scorer>-<construction>-s<seed> (`study_grid`); a finished folder is skipped, so an interrupted grid resumes
where it stopped. The micro backbone is trained once, under OUT/runs. One setting per OUT folder.
"""
import argparse, json, time
from pathlib import Path

from sweet_rl.base.core import run_cli
from sweet_rl.runs.credit_study import TestbedCreditConfig, study_grid, study_table

def seeds(spec:str) -> list[int]:
    "'0-9' or '0,3,5-7' -> the seeds."
    out = []
    for part in spec.split(','):
        a, _, b = part.partition('-')
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out

def value(text:str):
    "A --set value as JSON reads it (true, 250, 1e-3), else the text itself; the config then checks its type."
    try: return json.loads(text)
    except json.JSONDecodeError: return text

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out', type=Path)
    ap.add_argument('--scorers', default='control')
    ap.add_argument('--seeds', default='0-9')
    ap.add_argument('--set', nargs='*', default=[], metavar='FIELD=VALUE', help='TestbedCreditConfig fields for every run')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--summary', action='store_true', help='print the table of the finished runs and exit')
    a = ap.parse_args(argv)
    if not a.summary:
        fields = {k: value(v) for k, v in (kv.split('=', 1) for kv in a.set)}
        configs = [TestbedCreditConfig.from_dict({**fields, 'scorer': s, 'seed': n}, source='--set') for s in a.scorers.split(',') for n in seeds(a.seeds)]
        t0 = time.time()
        study_grid(configs, a.out, jobs=a.jobs)
        print(f"{len(configs)} runs in {a.out}, {time.time() - t0:.0f} s this call")
    print(study_table(a.out))

if __name__ == '__main__':
    run_cli(main)
