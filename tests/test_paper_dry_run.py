"""`reproduce --scale paper --dry-run` names every missing piece of a paper setup at once, and exits 0 on a complete one.

The machine is faked where a CPU runner cannot have it: `gpu_memory_gib` (8 GPUs of 80 GiB), `import_error` (deepspeed and
vllm import), `served_models` (the simulators answer). Everything else is real: the model folders hold their
`config.json`, the data folder the official layout with real bundled tasks and synthetic trajectories."""
import json, os, shutil

import pytest

import sweet_rl.runs.pipeline as pipeline
from sweet_rl.base.core import write_jsonl
from sweet_rl.base.data import OFFLINE_TRAJECTORIES, SAMPLE_DIR, sample_tasks
from sweet_rl.methods.critic import synthetic_trajectories

SERVED = ['Llama-3.1-70B-Instruct', 'Qwen2-VL-72B-Instruct']
VARIABLES = ['SWEET_RL_MODELS', 'SWEET_RL_DATA', 'SWEET_RL_SIMULATOR_URL', 'SWEET_RL_VLM_SIMULATOR_URL', 'SWEET_RL_FRONTEND_DATA']


def _machine(monkeypatch, gpus=(80.0,) * 8, missing=(), served=SERVED):
    "This process's view of the node: GPUs (GiB each), modules that do not import, what the simulators serve."
    monkeypatch.setattr(pipeline, 'gpu_memory_gib', lambda: list(gpus))
    monkeypatch.setattr(pipeline, 'import_error', lambda m, timeout=600: f"ModuleNotFoundError: No module named '{m}'" if m in missing else None)
    def serve(url, timeout=10.0):
        if served is None: raise ConnectionError(f"{url}: connection refused")
        return list(served)
    monkeypatch.setattr(pipeline, 'served_models', serve)


@pytest.fixture
def paper_data(paper_cluster):
    "The paper cluster's data folder filled: the official task layout, the offline file, the frontend offline file."
    tmp, env = paper_cluster
    data = tmp / 'colbench'
    for kind in ('backend', 'frontend'): shutil.copytree(SAMPLE_DIR / f'{kind}_tasks', data / f'{kind}_tasks')
    dialogues = synthetic_trajectories(4)  # their dialogues, with real tasks of each kind
    for kind, path in (('backend', data / OFFLINE_TRAJECTORIES), ('frontend', tmp / 'frontend_offline.jsonl')):
        write_jsonl(path, [{**t, 'task': task.to_dict()} for t, task in zip(dialogues, sample_tasks(kind))])
    return tmp, env


def test_a_complete_paper_setup_exits_0_with_a_wall_time_plan(paper_data, monkeypatch, capsys):
    _machine(monkeypatch)
    pipeline.main(['reproduce', '--scale', 'paper', '--dry-run'])  # no SystemExit: nothing to fix
    out, err = capsys.readouterr()
    checked = json.loads(out)
    assert checked['problems'] == [] and 'table4' not in checked['studies'], checked['problems']
    assert {'table2', 'table3', 'figure3a', 'figure3b'} <= set(checked['wall_time']), checked['wall_time']
    t2 = checked['wall_time']['table2']
    assert 0 < t2['busy_gpu_hours'] < t2['gpu_hours'] and abs(t2['gpu_hours'] - 8 * t2['wall_hours']) <= 0.5  # the node held, partly idle
    assert {'candidates', 'train sweet', 'evaluate'} <= set(t2['by_stage_hours'])
    lengths = {(p['what'], p['layout']['seq_len']) for p in checked['training'] if not p['vision']}
    assert lengths == {('actor', 16384), ('critic', 8192)}, lengths  # the release's lengths: the actor's, the critic's own
    assert 'table2: ' in err and '0 problem(s): ready' in err, err


def test_table4_is_opt_in_and_still_told_what_it_needs(paper_data, monkeypatch):
    _machine(monkeypatch)
    checked = pipeline.reproduce('paper', ['table4'], dry_run=True)
    assert checked['problems'] and all(p.startswith('table4/') for p in checked['problems']), checked['problems']


def test_an_empty_setup_names_every_missing_piece_at_once(monkeypatch, capsys):
    for v in VARIABLES: monkeypatch.delenv(v, raising=False)
    _machine(monkeypatch, gpus=(), missing=('deepspeed', 'vllm'))
    with pytest.raises(SystemExit) as e: pipeline.main(['reproduce', '--scale', 'paper', '--dry-run'])
    assert e.value.code == 1
    problems = json.loads(capsys.readouterr().out)['problems']
    text = '\n'.join(problems)
    assert all(f"environment variable {v} is not set" in text for v in VARIABLES), text
    assert '8 GPUs needed' in text and 'deepspeed does not import' in text and 'vllm does not import' in text, text


def test_a_set_environment_with_nothing_behind_it_is_named_at_once(paper_cluster, monkeypatch):
    "The variables set, but the data folder empty, the simulators down and the GPUs too small: all named in one dry run."
    _machine(monkeypatch, gpus=(24.0,) * 8, served=None)
    problems = pipeline.reproduce('paper', ['table2'], dry_run=True)['problems']
    text = '\n'.join(problems)
    assert 'GB per GPU planned' in text and 'the smallest GPU here has 24.0' in text, text
    assert text.count('does not answer') == 2, text  # the 70B and the VLM simulator
    assert "tasks_path" in text and "no 'test' split" in text and 'the file is empty' in text, text


def test_reproduce_stops_before_running_when_a_piece_is_missing(paper_cluster, monkeypatch):
    _machine(monkeypatch, served=None)
    monkeypatch.setattr(pipeline, 'run_notebook', lambda *a, **k: pytest.fail('a run started'))
    with pytest.raises(ValueError, match='not ready to reproduce at scale paper'): pipeline.reproduce('paper', ['table3'])


def test_a_two_node_config_is_checked_for_its_nodes_and_its_batch(paper_data, monkeypatch, tmp_path):
    """Training over 2 nodes of 8 GPUs: Table 5's 32 for RFT (1 x 16 x 2) passes inside a SLURM allocation of 2 nodes; outside one,
    or with the critic's and DPO's 8 (16 processes make at least 16), the dry run says what is wrong."""
    _machine(monkeypatch)
    two = 'configs/accelerate/deepspeed_zero3-2node.yaml'
    study = pipeline.Study.from_dict({'name': 'two_nodes', 'runs': [
        {'notebook': 'train_actor', 'params': {'task': 'backend', 'method': 'rft'}, 'scales': {'paper': {'accelerate': two, 'grad_accum': 2}}}]})
    (tmp_path / 'srun').write_text('#!/bin/sh\n'); (tmp_path / 'srun').chmod(0o755)
    monkeypatch.setenv('PATH', f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv('SLURM_JOB_NUM_NODES', raising=False)
    outside = pipeline.check_setup([study], 'paper')
    assert [p for p in outside['problems'] if 'SLURM' in p] == outside['problems'] and len(outside['problems']) == 1, outside['problems']
    monkeypatch.setenv('SLURM_JOB_NUM_NODES', '2')
    inside = pipeline.check_setup([study], 'paper')
    assert inside['problems'] == [], inside['problems']
    assert [(p['processes'], p['global_batch']) for p in inside['training']] == [(16, 32)]  # the plan's world size: 2 nodes of 8
    sweet = pipeline.Study.from_dict({'name': 'two_nodes_sweet', 'runs': [
        {'notebook': 'train_actor', 'params': {'task': 'backend', 'method': 'mtdpo'}, 'scales': {'paper': {'accelerate': two}}}]})
    text = '\n'.join(pipeline.check_setup([sweet], 'paper')['problems'])
    assert 'global batch 16' in text and 'differs from Table 5' in text, text


def test_a_busy_main_port_does_not_fail_the_dry_run(monkeypatch):
    "Nothing is launched when a config is checked: a port held on this machine (another test's process group, a login node) is no problem."
    import accelerate.utils.launch as acc_launch
    from sweet_rl.runs.launch import check_accelerate_config
    monkeypatch.setattr(acc_launch, 'is_port_in_use', lambda port: True)  # every port looks taken
    from sweet_rl.base.core import REPO_ROOT
    two = check_accelerate_config(REPO_ROOT / 'configs/accelerate/deepspeed_zero3-2node.yaml')
    assert (two['distributed_type'], two['zero_stage']) == ('DEEPSPEED', 3)
