"""AutoExplore (`sweet_rl.envs.explore`): hand-worked episodes with exact costs, commands that try to leave the copy,
an original left untouched, the oracle on every test task, deterministic tasks, and the depth curriculum and hiding
keeping the answer file."""
import os, random, string
from pathlib import Path, PurePosixPath

import pytest

from sweet_rl.base.protocol import ChoiceStep
from sweet_rl.envs.explore import (EXPLORE_REPOSITORIES, ExploreConfig, ExploreEnv, ExploreTask, explore_repositories,
                                   explore_tasks, find_questions, keep_files, path_depth, repository_digest, repository_files,
                                   repository_questions, repository_source, resolve_path)

TAXI = ExploreTask('gymnasium', 'Which file defines the class `TaxiEnv`?', '/gymnasium/envs/toy_text/taxi.py', 3, 'define')


@pytest.fixture
def env():
    e = ExploreEnv([TAXI])
    e.reset(seed=0)
    yield e
    e.close()


def costs(env, commands) -> list[float]:
    return [env.run_command(c).info['cost'] for c in commands]


# --- hand-worked episodes ------------------------------------------------------------------------------------------

def test_oracle_episode_costs(env):
    "Three cd's at 1 each, then a right id at 1 - 15: total -11; rewards are the negated costs."
    steps, actions = [], []
    while not env.done:
        actions.append(env.oracle_action())
        steps.append(env.step(actions[-1]))
    assert actions == ['cd gymnasium', 'cd envs', 'cd toy_text', 'id taxi.py']
    assert [s.info['cost'] for s in steps] == [1.0, 1.0, 1.0, -14.0]
    assert [s.reward for s in steps] == [-1.0, -1.0, -1.0, 14.0]
    assert env.total_cost == -11.0 and isinstance(steps[-1], ChoiceStep)
    assert steps[-1].info['outcome'] == 'right' and steps[-1].info['success'] and steps[-1].done


def test_each_surcharge(env):
    "Step 1; error 1 + 2; cut-off output (warning) 1 + 1; a wrong id 1 + 15 ends the episode."
    assert costs(env, ['ls', 'cd gymnasium', 'cd nowhere', 'cat __init__.py', 'head __init__.py', 'id error.py']) == \
        [1.0, 1.0, 3.0, 2.0, 1.0, 16.0]
    assert env.done and env.total_cost == 24.0
    with pytest.raises(RuntimeError, match='episode is over'): env.run_command('ls')


def test_exit_and_horizon(env):
    "exit costs 1 + 15; 15 commands without an id end the episode, the last one charged 1 + 15."
    assert costs(env, ['exit']) == [16.0] and env.done
    env.reset(seed=0)
    got = costs(env, ['ls'] * 15)
    assert got == [1.0] * 14 + [16.0] and env.done and env.t == 15 and env.total_cost == 30.0
    env.reset(seed=0)
    got = costs(env, ['ls'] * 11 + ['cd gymnasium', 'cd envs', 'cd toy_text', 'id taxi.py'])
    assert got[-1] == -14.0 and env.total_cost == 0.0  # a right id on the last allowed step is still right


def test_keyword_costs_count_file_text():
    "With keyword_costs, 'Error' in a file's own text is charged; by default only the environment's messages are."
    for keyword, want in ((False, 1.0), (True, 3.0)):
        e = ExploreEnv([TAXI], ExploreConfig(keyword_costs=keyword))
        e.reset(seed=0)
        e.run_command('cd gymnasium')
        step = e.run_command('head error.py')
        assert step.info['output'].startswith('"""Set of Error classes for gymnasium."""')
        assert step.info['cost'] == want
        e.close()


def test_read_once(env):
    costs(env, ['cd gymnasium'])
    assert 'cat logger.py' in env.valid_actions()
    first = env.run_command('cat logger.py')
    assert first.info['status'] == 'warning' and 'Files read: /gymnasium/logger.py' in first.observation
    again = env.run_command('cat logger.py')
    assert again.info['output'] == 'Error: cat: /gymnasium/logger.py was already read; each file can be read once'
    assert again.info['cost'] == 3.0 and not again.done
    assert 'cat logger.py' not in env.valid_actions() and {'head logger.py', 'tail logger.py', 'id logger.py'} <= set(env.valid_actions())
    assert env.run_command('cat py.typed').info['output'] == '(empty file)'


def test_state_text(env):
    env.run_command('cd gymnasium/envs')
    assert env.state() == ('Question: Which file defines the class `TaxiEnv`?\nCurrent directory: /gymnasium/envs\n'
                           'Files read: (none)\nLast command: cd gymnasium/envs\nOutput:\nNow in /gymnasium/envs')


def test_valid_actions_and_step(env):
    assert env.valid_actions() == ['ls', 'cd gymnasium', 'exit']
    with pytest.raises(ValueError, match="'cat /etc/passwd' is not a valid action"): env.step('cat /etc/passwd')
    env.step('cd gymnasium')
    acts = env.valid_actions()
    assert acts[:3] == ['ls', 'cd ..', 'cd envs'] and acts[-1] == 'exit'
    assert {'cat core.py', 'head core.py', 'tail core.py', 'id core.py'} <= set(acts)
    for a in acts[:-1]:  # every enumerated action is accepted and costs no error
        probe = ExploreEnv([TAXI]); probe.reset(seed=0); probe.step('cd gymnasium')
        assert probe.step(a).info['status'] != 'error', a
        probe.close()


# --- confinement -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('command, output', [
    ('cat ../../etc/passwd', 'Error: ../../etc/passwd is outside the repository'),
    ('cd ..', 'Error: .. is outside the repository'),
    ('cat /etc/passwd', 'Error: cat: no such file: /etc/passwd'),  # '/' is the repository's root
    ('ls /proc', 'Error: ls: no such directory: /proc'),
    ('rm -rf /', "Error: unknown command 'rm'; the commands are cd, ls, cat, head, tail, id and exit"),
    ('ls && cat /etc/passwd', 'Error: one plain command at a time: no ; | & < > ` $ or line breaks'),
    ('cat $(echo /etc/passwd)', 'Error: one plain command at a time: no ; | & < > ` $ or line breaks'),
    ('cd', 'Error: usage: cd DIR (got 0 arguments)'),
    ('exit now', 'Error: usage: exit (got 1 arguments)'),
    ('', 'Error: empty command; the commands are cd, ls, cat, head, tail, id and exit'),
])
def test_bad_commands_are_errors(env, command, output):
    step = env.run_command(command)
    assert step.info['output'] == output and step.info['cost'] == 3.0 and not step.done and env.cwd == '/'


def test_symlink_out_of_the_copy_is_refused(env, tmp_path):
    secret = tmp_path / 'secret.txt'
    secret.write_text('TOP SECRET')
    pkg = env.root / 'gymnasium'
    os.chmod(pkg, 0o755)
    os.symlink(secret, pkg / 'leak.py')
    os.symlink(tmp_path, pkg / 'outside')
    env.run_command('cd gymnasium')
    for cmd in ['cat leak.py', 'head leak.py', 'id leak.py', 'cd outside', 'ls outside', 'cat outside/secret.txt']:
        step = env.run_command(cmd)
        assert step.info['output'].startswith('Error: ') and 'leads outside the repository' in step.info['output'], cmd
        assert 'TOP SECRET' not in step.observation
    assert not any('leak' in a or 'outside' in a for a in env.valid_actions())
    with pytest.raises(ValueError, match='leads outside'): resolve_path(env.root, '/gymnasium', 'leak.py')


def test_random_text_never_raises(env):
    rng = random.Random(0)
    alphabet = string.printable + 'éü\x00'
    for _ in range(300):
        text = ''.join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        step = env.run_command(rng.choice(['', 'cat ', 'cd ', 'ls ', 'id ', 'head ']) + text)
        assert isinstance(step.info['output'], str)
        if step.done: env.reset(seed=0)


def test_original_untouched_and_copy_read_only(env):
    before = repository_digest('gymnasium')
    files = repository_files('gymnasium')
    for cmd in ['cd gymnasium', 'cat core.py', 'cd ../../..', 'rm -rf /', 'cd envs/toy_text', 'id taxi.py']: env.run_command(cmd)
    assert repository_digest('gymnasium') == before
    copied = sorted('/' + p.relative_to(env.root).as_posix() for p in env.root.rglob('*') if p.is_file())
    assert copied == list(files)
    assert all(os.stat(env.root / f[1:]).st_mode & 0o222 == 0 for f in files)
    assert repository_source('gymnasium') not in Path(os.path.realpath(env.root)).parents
    root = env.root
    env.close()
    assert not root.exists()


# --- tasks -----------------------------------------------------------------------------------------------------------

def test_tasks_are_deterministic_and_split_by_repository():
    assert explore_repositories('test') == ['papermill', 'tqdm']
    assert sorted(explore_repositories('train') + explore_repositories('test')) == sorted(EXPLORE_REPOSITORIES)
    train, test = explore_tasks('train'), explore_tasks('test')
    assert explore_tasks('test') == test and explore_tasks('train') == train
    assert not {t.repository for t in train} & {t.repository for t in test}
    assert test[0] == ExploreTask('papermill', 'Which file defines the class `AzureBlobStore`?', '/papermill/abs.py', 1, 'define')
    assert len(test) == 76
    for t in train + test + explore_tasks('all', 'find'):
        assert t.answer in repository_files(t.repository) and t.depth == path_depth(t.answer)


def test_questions_have_one_answer():
    "A define question's name is defined at top level in no other file; a find question's file name is unique."
    for name in ('gymnasium', 'tqdm'):
        qs = repository_questions(name)
        assert len({q.question for q in qs}) == len(qs)
        names = [PurePosixPath(p).name for p in repository_files(name)]
        assert all(names.count(PurePosixPath(q.answer).name) == 1 for q in find_questions(name))


def test_episode_sampling_is_seeded():
    cfg = ExploreConfig(hide_prob=0.5)
    a, b = ExploreEnv(config=cfg), ExploreEnv(config=cfg)
    for seed in (1, 2, 3):
        assert a.reset(seed=seed) == b.reset(seed=seed)
        assert sorted(p.relative_to(a.root) for p in a.root.rglob('*')) == sorted(p.relative_to(b.root) for p in b.root.rglob('*'))
    assert [a.reset() for _ in range(3)] == [b.reset() for _ in range(3)]  # the config seed's sequence
    a.close(); b.close()


@pytest.mark.parametrize('max_depth', [1, 2])
def test_depth_curriculum(max_depth):
    tasks = explore_tasks('train', max_depth=max_depth)
    assert tasks and max(t.depth for t in tasks) == max_depth
    env = ExploreEnv(explore_tasks('train'), ExploreConfig(max_depth=max_depth))
    assert env.tasks == tasks
    for seed in range(10):
        env.reset(seed=seed)
        assert env.task.depth <= max_depth
    env.close()


def test_hiding_keeps_the_answer():
    files = repository_files('gymnasium')
    for seed in range(20):
        kept = keep_files(files, TAXI.answer, 0.9, random.Random(seed))
        assert TAXI.answer in kept and len(kept) < len(files) // 2
    env = ExploreEnv(explore_tasks('train'), ExploreConfig(hide_prob=0.9))
    for seed in range(20):
        env.reset(seed=seed)
        assert (env.root / env.task.answer[1:]).is_file()
        while not env.done: step = env.step(env.oracle_action())
        assert step.info['success']
    env.close()


def test_oracle_solves_every_test_task():
    env = ExploreEnv(config=ExploreConfig(split='test', hide_prob=0.5))
    assert len(env.tasks) == 76
    for i, task in enumerate(env.tasks):
        env.reset(seed=i, task=task)
        if i % 2: env.run_command('cd papermill' if task.repository == 'tqdm' else 'cd tqdm')  # an error on the way
        while not env.done: step = env.step(env.oracle_action())
        assert step.info['outcome'] == 'right' and env.t <= env.horizon, task
        assert env.total_cost == (task.depth + 1) - 15 + (3.0 if i % 2 else 0.0), task
    env.close()
