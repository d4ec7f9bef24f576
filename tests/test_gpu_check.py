"""benchmarks/gpu_check.py (scripts/gpu_check.sh) in its dry mode: every step of the one-GPU check, at tiny shapes on the CPU.

The GPU mode launches the same stages with `accelerate launch` through the shipped ZeRO-3 and FSDP configs; the dry mode
runs their `sweet_rl.runs.launch` part in-process (no launcher, no engine) and skips FSDP, and its record says so.
"""
import importlib.util, json, math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def gpu_check():
    spec = importlib.util.spec_from_file_location('gpu_check', ROOT / 'benchmarks' / 'gpu_check.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def test_dry_run_records_every_step(gpu_check, tmp_path):
    rec = gpu_check.run(['--dry', '--json', str(tmp_path / 'record.json'), '--work', str(tmp_path / 'work')])
    assert json.loads((tmp_path / 'record.json').read_text()) == json.loads(json.dumps(rec, default=str))  # the file is the record
    steps = rec['steps']
    assert list(steps) == list(gpu_check.STEPS) and 'finished' in rec
    failed = {k: v.get('error') for k, v in steps.items() if v['status'] not in ('ok', 'skipped')}
    assert not failed, failed
    assert {k for k, v in steps.items() if v['status'] == 'skipped'} == {'fsdp_critic'} and 'dry' in steps['fsdp_critic']['reason']
    assert steps['versions']['packages']['torch']

    full = steps['zero3_critic_full']
    first, last = gpu_check.DRY.critic_sittings
    assert full['resumed'] and full['resumed_from'] == f'checkpoint-{first}' and len(full['losses']) == last
    for name in ('zero3_critic_full', 'zero3_critic_lora', 'zero3_sweet', 'zero3_mtdpo', 'zero3_rft'):
        s = steps[name]
        assert 'dry' in s['engine'] and 'configs/accelerate/deepspeed_zero3.yaml --num_processes 1 -m sweet_rl.runs.launch' in s['command']
        assert s['reloaded'].get('finite', s['reloaded'].get('turn_scores_finite')) and s['reloaded']['changed_share'] > 0, (name, s)
        assert all(math.isfinite(l) for l in s['losses'])

    probe = steps['memory_probe']
    L = gpu_check.DRY.probe_config['num_hidden_layers']
    for path in ('chunked', 'full'):
        assert probe['planned_gib'][f'{path}_{L}'] > 0 and f'{path}_{L}_extrapolated' in probe['measured_gib']
    assert probe['planned_gib'][f'full_{L}'] > probe['planned_gib'][f'chunked_{L}']  # 384 positions vs 256 at a time
    dec = steps['decode']
    assert all(dec[f'batch_{b}']['tokens_per_s'] > 0 for b in gpu_check.DRY.decode_batches)
    assert dec['candidate_hours_one_gpu']['hours_at_best_rate'] > 0
    mem = steps['zero3_memory']  # the wrapped ZeRO-3 path with Adam, beside the plan's total and loading peak
    assert 'deepspeed_zero3.yaml --num_processes 1 -m sweet_rl.runs.launch actor' in mem['command'] and mem['tokens'] == [2, gpu_check.DRY.probe_tokens]
    assert mem['planned_gib']['optimizer'] > 0 and mem['peak_over_planned_total'] > 0 and all(math.isfinite(l) for l in mem['losses'])
    cand = steps['candidates']  # per state against batched (transformers here: vLLM does not run on a CPU)
    assert cand['backend'] == 'transformers' and cand['per_state_s'] > 0 and cand['batched_s'] > 0


def test_a_failed_step_is_recorded_and_the_next_still_runs(gpu_check, tmp_path):
    (tmp_path / 'empty').mkdir()
    rec = gpu_check.run(['--dry', '--steps', 'versions,models,zero3_rft', '--tokenizer', str(tmp_path / 'empty'),
                         '--json', str(tmp_path / 'record.json'), '--work', str(tmp_path / 'work')])
    steps = json.loads((tmp_path / 'record.json').read_text())['steps']
    assert [steps[k]['status'] for k in ('versions', 'models', 'zero3_rft')] == ['ok', 'failed', 'skipped']
    assert steps['models']['error'] and 'models' in steps['zero3_rft']['reason']
    assert rec['steps'].keys() == steps.keys()  # the steps not asked for are not in the record


def test_gpu_mode_refuses_without_a_gpu(gpu_check, tmp_path):
    import torch
    if torch.cuda.is_available(): pytest.skip('a GPU is here')
    with pytest.raises(SystemExit): gpu_check.run(['--json', str(tmp_path / 'r.json')])
