"Tests of sweet_rl.base.data: byte-identical round trips, errors that name file/line/field, folder layouts, splits, sample."
import json, os, random
from pathlib import Path

import pytest

from sweet_rl.base.core import REPO_ROOT
from sweet_rl.base.data import (BackendTask, DataError, FrontendTask, OFFLINE_TRAJECTORIES, SAMPLE_DIR, Trajectory, Turn,
                           load_tasks, load_trajectories, sample_tasks, save_tasks, save_trajectories, split_tasks)

DEV_DIR = Path(os.environ.get('SWEET_RL_COLBENCH_DEV') or (REPO_ROOT.parent / 'shared' / 'colbench' if REPO_ROOT else Path('/nonexistent')))
SAMPLE_FILES = [SAMPLE_DIR / 'backend_tasks' / 'test.jsonl', SAMPLE_DIR / 'frontend_tasks' / 'test.jsonl']
DEV_FILES = [DEV_DIR / 'backend_dev.jsonl', DEV_DIR / 'frontend_dev.jsonl']

BACKEND_ROW = {'ground_truth': 'def add(a, b):\n    return a + b',
               'problem_description': 'Add two numbers.The signature of the function is: def add(a, b)',
               'test_cases': {'test1': 'add(1, 2)', 'test2': 'add(0, 0)'}, 'hidden_information': 'def add(a, b):\n    return a + b'}
FRONTEND_ROW = {'problem_description': 'A bakery page', 'ground_truth': '<html><body class="p-4">Bread \u00e9</body></html>'}
# Synthetic trajectories, made up for the tests (not ColBench data).
TRAJ_ROW = {'task': BACKEND_ROW,
            'dialogue_history': [{'role': 'assistant', 'content': 'Integers only?'}, {'role': 'user', 'content': 'Yes.'},
                                 {'role': 'assistant', 'content': 'I WANT TO ANSWER: def add(a, b): return a + b',
                                  'input': [{'role': 'user', 'content': 'Add two numbers.'}], 'output': 'raw'}],
            'answer': 'def add(a, b): return a + b', 'reward': 0.5}


def write_lines(path, lines):
    path.write_text(''.join(line + '\n' for line in lines), encoding='utf-8')
    return path


# --- round trips -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('src', SAMPLE_FILES, ids=lambda p: p.parent.name)
def test_sample_round_trip_is_byte_identical(src, tmp_path):
    assert save_tasks(load_tasks(src), tmp_path / 'out.jsonl').read_bytes() == src.read_bytes()


@pytest.mark.skipif(not all(p.is_file() for p in DEV_FILES), reason='ColBench development copy not present')
@pytest.mark.parametrize('src,n', [(DEV_FILES[0], 300), (DEV_FILES[1], 100)], ids=['backend', 'frontend'])
def test_dev_files_round_trip_is_byte_identical(src, n, tmp_path):
    tasks = load_tasks(src)
    assert len(tasks) == n
    assert {t.kind for t in tasks} == {'backend' if 'backend' in src.name else 'frontend'}
    assert save_tasks(tasks, tmp_path / src.name).read_bytes() == src.read_bytes()


def test_round_trip_keeps_key_order_extra_keys_and_absent_optional_keys(tmp_path):
    rows = [{'test_cases': BACKEND_ROW['test_cases'], 'id': 7, **BACKEND_ROW}]
    src = write_lines(tmp_path / 'in.jsonl', [json.dumps(r) for r in rows])
    tasks = load_tasks(src)
    assert tasks[0].extra == {'id': 7}
    assert save_tasks(tasks, tmp_path / 'out.jsonl').read_bytes() == src.read_bytes()
    trajs = [TRAJ_ROW, {**TRAJ_ROW, 'dialogue_history': [{'content': 'hi', 'role': 'user', 'input': None}], 'answer': None, 'reward': 1}]
    src = write_lines(tmp_path / 'traj.jsonl', [json.dumps(r) for r in trajs])
    loaded = load_trajectories(src)
    assert [t.to_dict() for t in loaded] == trajs
    assert save_trajectories(loaded, tmp_path / 'traj_out.jsonl').read_bytes() == src.read_bytes()
    assert Turn('user', 'hi').to_dict() == {'role': 'user', 'content': 'hi'}


def test_non_ascii_is_escaped_like_the_official_files(tmp_path):
    src = write_lines(tmp_path / 'web.jsonl', [json.dumps(FRONTEND_ROW)])
    assert '\\u00e9' in src.read_text()
    assert save_tasks(load_tasks(src), tmp_path / 'out.jsonl').read_bytes() == src.read_bytes()


# --- bad input -----------------------------------------------------------------------------------------------------

GOOD = json.dumps(BACKEND_ROW)
BAD_TASK_LINES = {  # id: (line 2 of the file, field the message must name or None, loader kwargs)
    'malformed_json': ('{"ground_truth": "x",', None, {}),
    'not_an_object': ('"just a string"', None, {}),
    'missing_field': (json.dumps({k: v for k, v in BACKEND_ROW.items() if k != 'hidden_information'}), 'hidden_information', {}),
    'wrong_type': (json.dumps({**BACKEND_ROW, 'ground_truth': ['def f(): pass']}), 'ground_truth', {}),
    'test_cases_not_dict': (json.dumps({**BACKEND_ROW, 'test_cases': 'add(1, 2)'}), 'test_cases', {}),
    'test_cases_value_not_str': (json.dumps({**BACKEND_ROW, 'test_cases': {'test1': 'add(1, 2)', 'test2': None}}), 'test_cases["test2"]', {}),
    'test_cases_empty': (json.dumps({**BACKEND_ROW, 'test_cases': {}}), 'test_cases', {}),
    'unknown_field_strict': (json.dumps({**BACKEND_ROW, 'problem_descripton': 'x'}), 'problem_descripton', {'strict': True}),
    'frontend_row_in_backend_file': (json.dumps(FRONTEND_ROW), 'test_cases', {}),
    'backend_row_in_frontend_file': (GOOD, 'test_cases', {'kind': 'frontend'}),
}


@pytest.mark.parametrize('case', list(BAD_TASK_LINES))
def test_bad_task_rows_name_file_line_and_field(case, tmp_path):
    line, field, kwargs = BAD_TASK_LINES[case]
    first = json.dumps(FRONTEND_ROW) if kwargs.get('kind') == 'frontend' else GOOD
    path = write_lines(tmp_path / f'{case}.jsonl', [first, line])
    with pytest.raises(DataError) as info:
        load_tasks(path, **kwargs)
    msg, err = str(info.value), info.value
    assert msg.startswith(f'{path}:2: '), msg
    assert (err.path, err.line, err.field) == (path, 2, field)
    if field: assert f'field {field!r}' in msg
    assert 'expected' in msg or 'belongs to backend' in msg


def test_malformed_json_reports_the_right_line_after_blank_lines(tmp_path):
    path = write_lines(tmp_path / 'gaps.jsonl', [GOOD, '', GOOD, '{oops'])
    with pytest.raises(DataError, match=r'gaps\.jsonl:4: malformed JSON'):
        load_tasks(path)


@pytest.mark.parametrize('lines', [[], ['', '   ']], ids=['no_bytes', 'blank_lines'])
def test_empty_file_is_an_error(lines, tmp_path):
    path = write_lines(tmp_path / 'empty.jsonl', lines)
    with pytest.raises(DataError, match=r'empty\.jsonl:1: the file is empty'):
        load_tasks(path)
    with pytest.raises(DataError, match=r'empty\.jsonl:1: the file is empty'):
        load_trajectories(path)


def test_unknown_fields_are_kept_by_default_and_refused_when_strict(tmp_path):
    path = write_lines(tmp_path / 'extra.jsonl', [json.dumps({**BACKEND_ROW, 'source': 'x'})])
    assert load_tasks(path)[0].extra == {'source': 'x'}
    with pytest.raises(DataError, match=r"extra\.jsonl:1: field 'source': unknown field"):
        load_tasks(path, strict=True)


BAD_TRAJ = {
    'reward_str': ({**TRAJ_ROW, 'reward': '0.5'}, 'reward'),
    'reward_bool': ({**TRAJ_ROW, 'reward': False}, 'reward'),
    'reward_missing': ({k: v for k, v in TRAJ_ROW.items() if k != 'reward'}, 'reward'),
    'answer_wrong_type': ({**TRAJ_ROW, 'answer': ['x']}, 'answer'),
    'task_not_object': ({**TRAJ_ROW, 'task': 'add'}, 'task'),
    'task_test_cases_bad': ({**TRAJ_ROW, 'task': {**BACKEND_ROW, 'test_cases': {'test1': 1}}}, 'task.test_cases["test1"]'),
    'dialogue_not_list': ({**TRAJ_ROW, 'dialogue_history': {'role': 'user'}}, 'dialogue_history'),
    'turn_role_missing': ({**TRAJ_ROW, 'dialogue_history': [{'role': 'user', 'content': 'a'}, {'content': 'b'}]}, 'dialogue_history[1].role'),
    'turn_content_wrong_type': ({**TRAJ_ROW, 'dialogue_history': [{'role': 'user', 'content': 3}]}, 'dialogue_history[0].content'),
}


@pytest.mark.parametrize('case', list(BAD_TRAJ))
def test_bad_trajectory_rows_name_file_line_and_field(case, tmp_path):
    row, field = BAD_TRAJ[case]
    path = write_lines(tmp_path / f'{case}.jsonl', [json.dumps(TRAJ_ROW), json.dumps(row)])
    with pytest.raises(DataError) as info:
        load_trajectories(path)
    assert str(info.value).startswith(f'{path}:2: field {field!r}: '), str(info.value)


def test_saving_refuses_non_records(tmp_path):
    with pytest.raises(TypeError, match='record 0'):
        save_tasks([BACKEND_ROW], tmp_path / 'x.jsonl')
    with pytest.raises(TypeError, match='expected Trajectory'):
        save_trajectories([BackendTask.from_dict(BACKEND_ROW)], tmp_path / 'x.jsonl')


# --- folders -------------------------------------------------------------------------------------------------------

def test_folder_layouts(tmp_path):
    backend, frontend = sample_tasks('backend'), sample_tasks('frontend')
    (tmp_path / 'backend_tasks').mkdir(); (tmp_path / 'frontend_tasks').mkdir()
    save_tasks(backend[:7], tmp_path / 'backend_tasks' / 'train.jsonl')
    save_tasks(backend[7:], tmp_path / 'backend_tasks' / 'test.jsonl')
    save_tasks(frontend, tmp_path / 'frontend_tasks' / 'test.jsonl')
    assert load_tasks(tmp_path, split='train') == backend[:7]  # only backend has a train split
    assert load_tasks(tmp_path, kind='backend', split='test') == backend[7:]
    assert load_tasks(tmp_path, kind='frontend') == frontend
    with pytest.raises(ValueError, match='pass kind='):
        load_tasks(tmp_path, split='test')
    with pytest.raises(FileNotFoundError, match="no 'valid' split"):
        load_tasks(tmp_path, split='valid')
    flat = tmp_path / 'flat'; flat.mkdir()
    save_tasks(frontend[:2], flat / 'dev.jsonl')
    assert load_tasks(flat, split='dev') == frontend[:2]
    save_trajectories([Trajectory.from_dict(TRAJ_ROW)], tmp_path / OFFLINE_TRAJECTORIES)
    assert load_trajectories(tmp_path)[0].reward == 0.5


def test_limit_reads_only_the_first_records():
    assert load_tasks(SAMPLE_FILES[0], limit=5) == sample_tasks('backend')[:5]
    with pytest.raises(ValueError, match='limit'):
        load_tasks(SAMPLE_FILES[0], limit=0)


# --- splits --------------------------------------------------------------------------------------------------------

def test_split_is_deterministic_disjoint_covering_and_order_independent():
    tasks = sample_tasks('backend') + sample_tasks('frontend')
    train, test = split_tasks(tasks, test_fraction=0.2, seed=3)
    assert (len(train), len(test)) == (40, 10)
    assert sorted(map(id, train + test)) == sorted(map(id, tasks))
    assert split_tasks(tasks, test_fraction=0.2, seed=3) == (train, test)
    shuffled = tasks[:]; random.Random(0).shuffle(shuffled)
    assert {id(t) for t in split_tasks(shuffled, n_test=10, seed=3)[1]} == {id(t) for t in test}
    assert [t for t in tasks if any(t is u for u in test)] == test  # each side keeps input order
    assert split_tasks(tasks, n_test=10, seed=4)[1] != test
    assert split_tasks(tasks, n_test=0, seed=3) == (tasks, [])


@pytest.mark.parametrize('kwargs', [{}, {'test_fraction': 0.1, 'n_test': 2}, {'test_fraction': 1.5}, {'n_test': 51}, {'n_test': -1}])
def test_split_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        split_tasks(sample_tasks('backend') + sample_tasks('frontend'), **kwargs)


# --- bundled sample ------------------------------------------------------------------------------------------------

def test_bundled_sample():
    backend, frontend = sample_tasks('backend'), sample_tasks('frontend')
    assert (len(backend), len(frontend)) == (40, 10)
    assert all(isinstance(t, BackendTask) and len(t.test_cases) == 10 for t in backend)
    assert all(isinstance(t, FrontendTask) and t.ground_truth.lstrip().startswith('<') for t in frontend)
    assert all(all(call.startswith(t.function_name + '(') for call in t.test_cases.values()) for t in backend)
    readme = (SAMPLE_DIR / 'README.md').read_text()
    assert 'facebook/collaborative_agent_bench' in readme and 'WebSight' in readme


@pytest.mark.skipif(not all(p.is_file() for p in DEV_FILES), reason='ColBench development copy not present')
def test_bundled_sample_is_the_first_dev_rows():
    for sample, dev, n in zip(SAMPLE_FILES, DEV_FILES, (40, 10)):
        assert sample.read_bytes() == b''.join(dev.read_bytes().splitlines(keepends=True)[:n])


def test_signature_helpers():
    t = BackendTask.from_dict(BACKEND_ROW)
    assert (t.signature, t.function_name) == ('def add(a, b)', 'add')
    no_sig = BackendTask.from_dict({**BACKEND_ROW, 'problem_description': 'Add two numbers.'})
    assert (no_sig.signature, no_sig.function_name) == (None, 'add')  # falls back to the reference code
