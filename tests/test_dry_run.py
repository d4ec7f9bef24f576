"""`make reproduce SCALE=paper` as a cluster user runs it: Table 4 opt-in, nothing installed over the node's GPU packages,
the dry run's count of missing pieces, and a malformed data folder named by file, line and field.

The machine is faked as in tests/test_paper_dry_run.py (its `_machine` and `paper_data`)."""
import json, shutil, subprocess

import pytest

import sweet_rl.runs.pipeline as pipeline
from sweet_rl.base.core import REPO_ROOT
from sweet_rl.base.data import OFFLINE_TRAJECTORIES
from test_paper_dry_run import VARIABLES, _machine, paper_data  # noqa: F401 (paper_data: a fixture)


def _make(*args) -> list[str]:
    "The commands `make -n ARGS` would run in the repository (nothing is run)."
    out = subprocess.run(['make', '-n', '-C', str(REPO_ROOT), *args], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.strip() and not line.startswith('make')]


def test_make_reproduce_at_paper_leaves_table4_out_unless_named_and_installs_nothing():
    default, opted = _make('reproduce', 'SCALE=paper'), _make('reproduce', 'SCALE=paper', 'STUDIES=table4')
    assert default == ['.venv/bin/python -m sweet_rl.runs.pipeline reproduce --scale paper'], default  # setup.sh would install CPU torch
    assert 'table4' not in pipeline.default_studies('paper') and 'table4' in pipeline.default_studies('small')
    assert opted == ['.venv/bin/python -m sweet_rl.runs.pipeline reproduce --scale paper --studies table4'], opted
    assert _make('reproduce')[0] == 'bash scripts/setup.sh'  # the CPU scales still set up first
    assert _make('dry-run', 'SCALE=paper', 'PYTHON=python') == ['python -m sweet_rl.runs.pipeline reproduce --scale paper --dry-run']


def test_an_empty_setup_counts_every_missing_piece_once(monkeypatch, capsys):
    "No variable, no GPU, neither deepspeed nor vllm: 8 problems in one run, each named once (5 variables, the GPUs, 2 modules)."
    for v in VARIABLES: monkeypatch.delenv(v, raising=False)
    _machine(monkeypatch, gpus=(), missing=('deepspeed', 'vllm'))
    with pytest.raises(SystemExit) as e: pipeline.main(['reproduce', '--scale', 'paper', '--dry-run'])
    problems = json.loads(capsys.readouterr().out)['problems']
    assert e.value.code == 1 and len(problems) == 8, problems
    named = [next((v for v in VARIABLES if f"variable {v} is not set" in p), None) for p in problems[:5]]
    assert sorted(named) == sorted(VARIABLES), problems
    assert problems[5].startswith('8 GPUs needed') and '0 visible' in problems[5], problems
    assert [p.split(' ')[0] for p in problems[6:]] == ['deepspeed', 'vllm'], problems


def _rewrite_first(path, change):
    "Replace the first JSONL record of `path` by `change(record)`."
    lines = path.read_text().splitlines()
    lines[0] = json.dumps(change(json.loads(lines[0])))
    path.write_text('\n'.join(lines) + '\n')


def test_a_malformed_data_folder_names_each_file_line_and_field(paper_data, monkeypatch):
    tmp, _ = paper_data
    _machine(monkeypatch)
    data = tmp / 'colbench'
    _rewrite_first(data / 'backend_tasks' / 'test.jsonl', lambda r: {k: v for k, v in r.items() if k != 'test_cases'})
    _rewrite_first(data / OFFLINE_TRAJECTORIES, lambda r: {**r, 'dialogue_history': 'not a list'})
    problems = pipeline.reproduce('paper', ['table2'], dry_run=True)['problems']
    tasks = [p for p in problems if "backend_tasks/test.jsonl:1: field 'test_cases': missing" in p]
    offline = [p for p in problems if f"{OFFLINE_TRAJECTORIES}:1: field 'dialogue_history': expected a list" in p]
    assert tasks and offline, problems
    assert all('backend_tasks' in p or OFFLINE_TRAJECTORIES in p for p in problems), problems  # the frontend files are whole


@pytest.mark.parametrize('name', ['actor_sweet', 'actor_mtdpo_backend', 'actor_mtdpo_frontend', 'actor_rft_backend', 'actor_rft_frontend',
                                  'critic_backend'])
def test_the_paper_configs_plan_the_release_lengths(paper_cluster, name):
    "`python -m sweet_rl.runs.launch plan` on configs/paper/: the actors at the release's 16,384 tokens, the critic at its 8,192."
    from sweet_rl.runs.launch import launch_plan
    what = name.split('_')[0]
    plan = launch_plan(what, REPO_ROOT / 'configs' / 'paper' / f'{name}.json', 'configs/accelerate/deepspeed_zero3.yaml')
    assert (plan['layout']['seq_len'], plan['problems']) == (16384 if what == 'actor' else 8192, []), plan


def test_missing_models_do_not_hide_the_simulators_and_the_data(paper_data, monkeypatch):
    "A study with a missing model folder still has its simulators and data checked, and the folder is named once (not by each plan)."
    tmp, _ = paper_data
    _machine(monkeypatch, served=None)
    shutil.rmtree(tmp / 'models' / 'Llama-3.1-8B-Instruct')
    (tmp / 'colbench' / OFFLINE_TRAJECTORIES).write_text('')
    problems = pipeline.reproduce('paper', ['table2'], dry_run=True)['problems']
    text = '\n'.join(problems)
    assert [p for p in problems if 'Llama-3.1-8B-Instruct' in p] == [problems[0]] and 'missing paths' in problems[0], text
    assert text.count('does not answer') == 2 and 'the file is empty' in text, text
