"""The credit testbed's go/no-go (studies/credit-testbed/PLAN.md, step 1): one seed, micro scale, local pairs, 250 steps.

    OMP_NUM_THREADS=1 python scripts/credit_gonogo.py OUT_DIR [NAME ...]

Runs the named settings (default: all, in the plan's order: the logistic baseline, then the positive control at the
plan's defaults, then the variants the first look asked for), each a `testbed_credit_run` into OUT_DIR/NAME, finished
runs read back. Prints one line per run: info-gated accuracy on both held-out sets, answer-or-ask, the critic's fit to
its own training pairs by kind, and the wall time by stage.
"""
import sys, time
from pathlib import Path

from sweet_rl.runs.credit_study import TestbedCreditConfig, testbed_credit_run

SETTINGS = {  # name -> fields of TestbedCreditConfig (the rest at their defaults: local pairs, micro backbone, seed 0)
    'logistic': dict(scorer='logistic', steps=250),
    'control-lora-b1': dict(scorer='control', steps=250),  # the plan's defaults: LoRA, lr 1e-3, one pair a step
    'control-full-b1': dict(scorer='control', steps=250, lora=False),
    'control-full-b1-canonical': dict(scorer='control', steps=250, lora=False, paraphrase=False),
    'control-full-b8': dict(scorer='control', steps=250, lora=False, batch_size=8),
}

if __name__ == '__main__':
    out, names = Path(sys.argv[1]), sys.argv[2:] or list(SETTINGS)
    for name in names:
        t0 = time.time()
        m = testbed_credit_run(TestbedCreditConfig(**SETTINGS[name]), out / name, runs_dir=out / 'runs', progress=False)
        g = lambda split: f"{m[split]['info_gated']['mean']:.3f} [{m[split]['info_gated']['ci'][0]:.3f}, {m[split]['info_gated']['ci'][1]:.3f}]"
        aa = lambda k: m['test'][f'answer_or_ask ({k})']['mean']
        print(f"{name}: info-gated test {g('test')}, new {g('new')}; answer-or-ask (slot off) {aa('some slot off default'):.3f}, "
              f"(all default) {aa('all default'):.3f}; training pairs {m['training_pairs']}; seconds {m['seconds']} "
              f"(this call {time.time() - t0:.0f})", flush=True)
