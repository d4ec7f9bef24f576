"""Checkpoints by wall time at the paper scale: one ZeRO-3 checkpoint of an 8B model writes ~105 GiB
(bf16 weights, fp32 master weights and Adam's moments), so the paper preset checkpoints every 30 minutes of wall time,
not every 25 steps, and a launched run keeps only the last; with several processes all of them save when process 0's
clock says so (before, `TimedCheckpoints` did nothing with more than one process)."""
import json, subprocess, sys
from pathlib import Path

from sweet_rl.runs.launch import train_actor_configs
from sweet_rl.runs.pipeline import Study, check_params, expand_study, notebook_parameters

ROOT = Path(__file__).resolve().parents[1]


def test_paper_preset_checkpoints_by_wall_time_and_keeps_the_last(paper_cluster):
    declared, seen = notebook_parameters('train_actor'), 0
    for name in ('table2', 'table3', 'table4', 'figure3b'):
        for nb, p in expand_study(Study.load(name), 'paper'):
            if nb != 'train_actor': continue
            for what, cfg in train_actor_configs(check_params(nb, p, declared)).items():
                assert (cfg.save_minutes, cfg.save_total_limit) == (30, 1) and cfg.save_steps >= 10 ** 6, (name, what, cfg)
                seen += 1
    assert seen >= 20  # every actor and every critic trained at the paper scale
    for f in sorted((ROOT / 'configs' / 'paper').glob('*.json')):  # the configs for `python -m sweet_rl.runs.launch` by hand
        d = json.loads(f.read_text())
        assert (d['save_minutes'], d['save_total_limit']) == (30, 1) and d['save_steps'] >= 10 ** 6, f.name


TWO_CLOCKS = '''
import os, sys, tempfile, torch, torch.distributed as dist
from types import SimpleNamespace
from sweet_rl.base.train import TimedCheckpoints

def rank_main(rank, store, out):
    dist.init_process_group('gloo', store=dist.FileStore(store, 2), rank=rank, world_size=2)
    args = SimpleNamespace(world_size=2, device='cpu')
    for case, minutes_since_save in (('p0_due', (11, 3)), ('p1_due', (3, 11))):  # per process, against save_minutes=10
        t, control = [0.0], SimpleNamespace(should_save=False)
        cb = TimedCheckpoints(10, clock=lambda: t[0])
        cb.on_train_begin(args, None, control)
        t[0] = 60 * minutes_since_save[rank]
        cb.on_step_end(args, None, control)
        open(f"{out}/{case}.{rank}", 'w').write(str(control.should_save))
    dist.destroy_process_group()

if __name__ == '__main__':
    with tempfile.TemporaryDirectory() as d: torch.multiprocessing.start_processes(rank_main, args=(f"{d}/store", sys.argv[1]), nprocs=2, start_method='fork')
'''


def test_timed_checkpoints_follow_process_0_in_every_process(tmp_path):
    (tmp_path / 'two_clocks.py').write_text(TWO_CLOCKS)
    proc = subprocess.run([sys.executable, str(tmp_path / 'two_clocks.py'), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = {f.name: f.read_text() == 'True' for f in tmp_path.glob('p*_due.*')}
    assert saved == {'p0_due.0': True, 'p0_due.1': True, 'p1_due.0': False, 'p1_due.1': False}, saved
