"""CI's own parameters: a notebook named in the smoke scale runs with those parameters (injected into a temporary copy),
while its defaults stay what a user runs."""
import importlib.util, json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('run_notebooks', ROOT / 'scripts' / 'run_notebooks.py')
run_notebooks = importlib.util.module_from_spec(spec); spec.loader.exec_module(run_notebooks)


def test_train_critic_defaults_are_the_users_and_ci_runs_smaller():
    from sweet_rl.runs.pipeline import load_scales, notebook_parameters
    declared = notebook_parameters('train_critic')
    assert (declared['n_tasks']['default'], declared['max_steps']['default']) == (40, 32)  # the user's command
    ci = run_notebooks.ci_parameters()
    assert ci['train_critic'] == {'n_tasks': 16, 'max_steps': 8} == load_scales()['smoke']['train_critic']
    # the notebook asserts its learning check only at CI's parameters: its guard names the same numbers
    guard = f"('backend', 'sweet', 'scripted', {ci['train_critic']['n_tasks']}, {ci['train_critic']['max_steps']}, 0)"
    assert guard in (ROOT / 'nbs' / 'train_critic.ipynb').read_text(), guard
    for name, params in ci.items():  # every CI parameter is one the notebook declares
        assert set(params) <= set(notebook_parameters(name)), name


def test_injected_copy_sets_the_parameters_after_the_parameters_cell(tmp_path):
    nb = {'cells': [{'cell_type': 'code', 'metadata': {'tags': ['parameters']}, 'source': 'n_tasks: int = 40  # tasks\nseed: int = 0',
                     'outputs': [], 'execution_count': None, 'id': 'a'},
                    {'cell_type': 'code', 'metadata': {}, 'source': 'print(n_tasks)', 'outputs': [], 'execution_count': None, 'id': 'b'}],
          'metadata': {'kernelspec': {'name': 'python3', 'language': 'python', 'display_name': 'Python 3'},
                       'language_info': {'name': 'python'}}, 'nbformat': 4, 'nbformat_minor': 5}
    src = tmp_path / 'demo.ipynb'; src.write_text(json.dumps(nb))
    out = run_notebooks.with_parameters(src, {'n_tasks': 24})
    assert out == tmp_path / '_ci_demo.ipynb' and json.loads(src.read_text()) == nb  # the notebook itself is untouched
    cells = json.loads(out.read_text())['cells']
    assert [c['id'] for c in cells][0] == 'a' and 'injected-parameters' in cells[1]['metadata']['tags']
    assert 'n_tasks = 24' in ''.join(cells[1]['source']) and ''.join(cells[2]['source']) == 'print(n_tasks)'
    with pytest.raises(SystemExit, match='not parameters of demo.ipynb'): run_notebooks.with_parameters(src, {'n_task': 24})
