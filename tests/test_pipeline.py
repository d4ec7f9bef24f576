"The reproduction pipeline: committed studies are valid at every scale; collect refuses mixed code versions; the CLI's dry run."
import json, os, subprocess, sys
from pathlib import Path

import pandas as pd
import pytest

from sweet_rl.runs.pipeline import ARTIFACTS, SCALES, STUDIES, STUDIES_DIR, Study, check_params, collect_study, expand_study, run_dir_for, run_study

ROOT = Path(__file__).resolve().parents[1]
# what the paper preset reads from the environment (tests/conftest.py's paper_cluster sets them to a fake cluster)
PAPER_ENV = ('SWEET_RL_MODELS', 'SWEET_RL_DATA', 'SWEET_RL_FRONTEND_DATA', 'SWEET_RL_SIMULATOR_URL', 'SWEET_RL_VLM_SIMULATOR_URL')


@pytest.mark.parametrize('scale', SCALES)
def test_committed_studies_check_at_every_scale(scale, paper_cluster):
    names = sorted(p.stem for p in STUDIES_DIR.glob('*.yaml') if p.stem != 'scales')  # every study, published or not yet
    assert set(ARTIFACTS) <= set(STUDIES) <= set(names), names  # reproduce runs STUDIES: every artifact's, and more
    for name in names:
        dirs = run_study(name, scale, dry_run=True)  # every run's parameters are declared and typed right
        study = Study.load(name)
        has_scale = any(scale in r.get('at', SCALES) for r in study.runs)  # reflect: no paper-scale runs yet
        assert bool(dirs) == has_scale and len(set(dirs)) == len(dirs), name


def test_paper_scale_needs_its_environment(monkeypatch):
    for k in PAPER_ENV: monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match='environment variable not set'): expand_study(Study.load('table2'), 'paper')


def test_studies_share_runs_by_parameters():
    small = {s: set(run_study(s, 'small', dry_run=True)) for s in ('table2', 'table3', 'figure3b')}
    assert len(small['table2'] & small['table3']) == 3  # RFT, MT-DPO and SWEET-RL backend runs are the same directories
    assert len(small['table3'] & small['figure3b']) == 3


def _fake_run(runs, nb, params, commit):
    full = check_params(nb, params)
    d = run_dir_for(nb, full, runs); d.mkdir(parents=True)
    (d / 'ep.jsonl').write_text(json.dumps({'task': {'x': 1}, 'tests_passed': 1.0, 'success': True}) + '\n')
    (d / 'params.json').write_text(json.dumps(full))
    (d / 'metrics.json').write_text(json.dumps({'notebook': nb, 'episodes': {'collaborative': 'ep.jsonl'}}))
    (d / 'manifest.json').write_text(json.dumps({'git': {'commit': commit, 'dirty': False}}))


def test_collect_refuses_mixed_code_versions(tmp_path):
    study = Study.from_dict({'name': 's', 'runs': [{'notebook': 'evaluate', 'grid': {'seed': [0, 1]}}]})
    # the runs the study expands to at its scale (smoke: CI's own evaluate parameters too), one per code version
    for (nb, params), commit in zip(expand_study(study), ('aaa', 'bbb')): _fake_run(tmp_path, nb, params, commit)
    with pytest.raises(ValueError, match='2 code versions'): collect_study(study, runs_dir=tmp_path)
    table = collect_study(study, runs_dir=tmp_path, allow_mixed_versions=True, results_dir=tmp_path / 'results')
    assert list(table['commit']) == ['aaa', 'bbb'] and (tmp_path / 'results' / 's.csv').is_file()


def test_collect_names_unfinished_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match='not finished'): collect_study('figure3a', 'small', runs_dir=tmp_path)


def test_cli_dry_run_of_the_paper_preset(paper_cluster):
    env = {**os.environ, **paper_cluster[1]}
    proc = subprocess.run([sys.executable, '-m', 'sweet_rl.runs.pipeline', 'reproduce', '--scale', 'paper', '--dry-run'],
                          capture_output=True, text=True, env=env, timeout=300)
    out = json.loads(proc.stdout)
    assert out['scale'] == 'paper' and out['studies'] == list(out['runs']) == [s for s in STUDIES if s != 'table4']  # Table 4 opt-in
    # exit 1: no plan has a problem, but this machine is no paper node (the simulators at http://simulator:8000 never
    # answer, the data folder is empty); each problem named on stderr too
    assert proc.returncode == 1 and not any(p.startswith('table4/') for x in out['training'] for p in x['problems']), proc.stderr[-2000:]
    assert sum('does not answer' in p for p in out['problems']) == 2 and 'problem(s):' in proc.stderr, out['problems']


def test_cli_reports_a_users_mistakes_at_once():
    "Every unset variable of the paper preset is named in one try, without a traceback; the run itself stops before starting."
    env = {k: v for k, v in os.environ.items() if not k.startswith('SWEET_RL_')}
    proc = subprocess.run([sys.executable, '-m', 'sweet_rl.runs.pipeline', 'reproduce', '--scale', 'paper', '--dry-run'],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1 and 'Traceback' not in proc.stderr, proc.stderr[-2000:]
    unset = [p for p in json.loads(proc.stdout)['problems'] if 'is not set' in p]
    assert len(unset) == 5 and all('SWEET_RL_' in p and '.yaml' in p for p in unset), unset
    proc = subprocess.run([sys.executable, '-m', 'sweet_rl.runs.pipeline', 'reproduce', '--scale', 'paper'],
                          capture_output=True, text=True, env={**env, 'SWEET_RL_TRACEBACK': '1'}, timeout=300)
    assert proc.returncode == 1 and 'ConfigError: not ready to reproduce at scale paper' in proc.stderr, proc.stderr[-2000:]


def study_run_dirs(study, runs_dir, scale='smoke'):
    "Each run of `study` at `scale` as (full params, its fresh run folder): where `collect_study` looks for it."
    out = []
    for nb, params in expand_study(study, scale):
        full = check_params(nb, params)
        d = run_dir_for(nb, full, runs_dir); d.mkdir(parents=True); out.append((full, d))
    return out


def test_collect_choice_episodes_and_curves(tmp_path):
    "Reflect-RL runs: episodes with a success and a return become rows (success in %, return as it is); curves a CSV."
    study = Study.from_dict({'name': 'r', 'runs': [{'notebook': 'train_reflect', 'grid': {'reflection': [True, False]}}]})
    for (full, d), succ in zip(study_run_dirs(study, tmp_path), ([1, 1, 0, 1], [0, 0, 1, 0])):
        eps = [{'task': {'env': 'taxi', 'seed': s}, 'success': float(x), 'return': 1.0 if x else -0.5} for s, x in enumerate(succ)]
        (d / 'rl.jsonl').write_text(''.join(json.dumps(e) + '\n' for e in eps))
        (d / 'params.json').write_text(json.dumps(full))
        curve = [{'iteration': i + 1, 'success': 0.25 * i, 'return': 0.0} for i in range(3)]
        (d / 'metrics.json').write_text(json.dumps({'notebook': 'train_reflect', 'episodes': {'rl': 'rl.jsonl'}, 'curve': curve}))
        (d / 'manifest.json').write_text(json.dumps({'git': {'commit': 'aaa', 'dirty': False}}))
    table = collect_study(study, runs_dir=tmp_path, results_dir=tmp_path / 'results')
    assert list(table['success_pct']) == [75.0, 25.0] and list(table['return']) == [0.625, -0.125]
    assert list(table['n_tasks']) == [4, 4] and 'return_pct' not in table
    curves = pd.read_csv(tmp_path / 'results' / 'r_curves.csv')
    assert len(curves) == 6 and set(curves['run']) == set(table['run']) and list(curves['iteration'][:3]) == [1, 2, 3]


def test_collect_search_episodes(tmp_path):
    "MT-GRPO runs on the search task: episodes keep raw reward scores under `rewards`; rates in %, the weighted reward as it is."
    study = Study.from_dict({'name': 'm', 'runs': [{'notebook': 'train_mtgrpo', 'grid': {'mode': ['or', 'mt']}}]})
    tool_uses = {'or': [0, 0, 1, 0], 'mt': [1, 1, 1, 0]}
    for full, d in study_run_dirs(study, tmp_path):  # the runs at the study's scale (smoke: CI's own train_mtgrpo parameters too)
        tools = tool_uses[full['mode']]
        eps = [{'task': {'problem_description': f'q{i}'}, 'reward': 0.2 * t, 'success': False,
                'rewards': {'exact_match': 0.0, 'answer_present': 0.0, 'tool_execution': float(t), 'answer_in_result': 0.0,
                            'xml_format': 0.0, 'xml_tags': 0.0}} for i, t in enumerate(tools)]
        (d / 'eval_trained.jsonl').write_text(''.join(json.dumps(e) + '\n' for e in eps))
        (d / 'params.json').write_text(json.dumps(full))
        (d / 'metrics.json').write_text(json.dumps({'notebook': 'train_mtgrpo', 'episodes': {'trained': 'eval_trained.jsonl'},
                                                    'curve': [{'step': 1, 'reward_tool_execution': 0.5}]}))
        (d / 'manifest.json').write_text(json.dumps({'git': {'commit': 'aaa', 'dirty': False}}))
    table = collect_study(study, runs_dir=tmp_path, results_dir=tmp_path / 'results').sort_values('param.mode')
    assert list(table['tool_execution_pct']) == [75.0, 25.0] and list(table['exact_match_pct']) == [0.0, 0.0]
    assert [round(x, 3) for x in table['reward']] == [0.15, 0.05] and 'reward_pct' not in table


@pytest.mark.parametrize('mixed, dirty, ok', [(False, False, False), (True, False, True), (True, True, False)])
def test_studies_carried_over_sittings_may_mix_commits(tmp_path, mixed, dirty, ok):
    study = Study.from_dict({'name': 'v', 'mixed_versions': mixed, 'runs': [{'notebook': 'train_reflect', 'grid': {'reflection': [True, False]}}]})
    for (full, d), commit in zip(study_run_dirs(study, tmp_path), ('aaa', 'bbb')):
        (d / 'rl.jsonl').write_text(json.dumps({'task': {'seed': 0}, 'success': 1.0, 'return': 1.0}) + '\n')
        (d / 'params.json').write_text(json.dumps(full))
        (d / 'metrics.json').write_text(json.dumps({'notebook': 'train_reflect', 'episodes': {'rl': 'rl.jsonl'}}))
        (d / 'manifest.json').write_text(json.dumps({'git': {'commit': commit, 'dirty': dirty and commit == 'bbb'}}))
    if ok: assert sorted(collect_study(study, runs_dir=tmp_path)['commit']) == ['aaa', 'bbb']
    else:
        with pytest.raises(ValueError, match='2 code versions'): collect_study(study, runs_dir=tmp_path)
    with pytest.raises(ValueError, match="'mixed_versions' must be true or false"):
        Study.from_dict({'name': 'v', 'mixed_versions': 'yes', 'runs': [{'notebook': 'train_reflect'}]})


def test_parts_split_a_study_between_workers():
    every = run_study('reflect', 'small', dry_run=True)
    parts = [run_study('reflect', 'small', dry_run=True, part=(i, 3)) for i in (1, 2, 3)]
    assert sorted(d for p in parts for d in p) == sorted(every) and parts[0][0] == every[0] and parts[1][0] == every[1]
    with pytest.raises(ValueError, match='1 <= i <= n'): run_study('reflect', 'small', dry_run=True, part=(4, 3))


def _tiny_notebook(folder):
    "A two-cell notebook that writes its run files, recording its parameter and where its kernel puts shared stores."
    import nbformat
    params = nbformat.v4.new_code_cell("x: int = 1  # a parameter\nout_dir: str = ''  # the run folder")
    params.metadata['tags'] = ['parameters']
    body = nbformat.v4.new_code_cell("import json, os\nfrom pathlib import Path\n"
                                     "from sweet_rl.base.core import artifact_dir\n"
                                     "shared = str(artifact_dir('rollouts', {'x': x}))\n"
                                     "for f in ('params.json', 'metrics.json', 'manifest.json'): (Path(out_dir) / f).write_text(json.dumps({'x': x, 'shared': shared}))")
    nb = nbformat.v4.new_notebook(cells=[params, body], metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}})
    (folder / 'nbs').mkdir()
    nbformat.write(nb, folder / 'nbs' / 'tiny.ipynb')
    return folder / 'nbs' / 'tiny.ipynb'

def test_a_relative_runs_dir_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    "papermill runs a notebook in the notebook's folder; a relative `runs_dir` must still mean the caller's (a study once wrote into nbs/runs/)."
    from sweet_rl.runs.pipeline import run_notebook
    nb = _tiny_notebook(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = run_notebook(nb, {'x': 2}, 'runs', progress=False)
    assert out.is_absolute() and out.parent.parent == tmp_path / 'runs', out
    assert json.loads((out / 'metrics.json').read_text())['x'] == 2
    assert not (tmp_path / 'nbs' / 'runs').exists()

def test_a_runs_dir_also_holds_the_shared_stores_its_notebooks_make(tmp_path, monkeypatch):
    "Shared rollouts, candidates, scores and critics go beside the run folders, where `archive --runs-dir` looks, not into the repository's runs/."
    from sweet_rl.runs.pipeline import run_notebook
    monkeypatch.setenv('SWEET_RL_RUNS', str(tmp_path / 'elsewhere'))
    out = run_notebook(_tiny_notebook(tmp_path), {'x': 3}, tmp_path / 'study', progress=False)
    shared = Path(json.loads((out / 'metrics.json').read_text())['shared'])
    assert shared.parent.parent == tmp_path / 'study' / 'shared', shared
    assert os.environ['SWEET_RL_RUNS'] == str(tmp_path / 'elsewhere')  # the caller's setting is back

def test_a_run_another_process_is_running_is_left_to_it(tmp_path, monkeypatch):
    "Two processes on one run would mix its records: the second is refused, naming the first; `run_study` goes on with the other runs; `status` says 'running'."
    from sweet_rl.base.core import Busy, file_lock
    from sweet_rl.runs.pipeline import RUNNING, run_notebook, study_status
    nb, runs = _tiny_notebook(tmp_path), tmp_path / 'runs'
    monkeypatch.setattr('sweet_rl.runs.pipeline.NBS_DIR', nb.parent)  # a study names its notebooks by their names in nbs/
    study = Study.from_dict({'name': 't', 'runs': [{'notebook': 'tiny', 'grid': {'x': [4, 5]}}]})
    held, free = run_study(study, 'smoke', runs, dry_run=True)
    with file_lock(held / RUNNING):  # as another process running x=4 would hold it
        with pytest.raises(Busy, match=f'held by another process \\(pid {os.getpid()}\\)'): run_notebook(nb, {'x': 4}, runs, progress=False)
        assert not (held / 'metrics.json').exists()
        assert list(study_status(study, 'smoke', runs, tmp_path / 'archive')['state']) == ['running', 'not started']
        assert run_study(study, 'smoke', runs, progress=False) == [held, free]
        assert (free / 'metrics.json').is_file() and not (held / 'metrics.json').exists()
    assert list(study_status(study, 'smoke', runs, tmp_path / 'archive')['state']) == ['started', 'finished']
    run_study(study, 'smoke', runs, progress=False)
    assert (held / 'metrics.json').is_file()
