"Backend evaluator and environment: extraction, sandboxed scoring, parity semantics, episode protocol."
import json, os
from pathlib import Path

import pytest

from sweet_rl.base.data import BackendTask, sample_tasks
from sweet_rl.envs.backend import (ANSWER_MARK, BackendEnv, BackendEnvConfig, evaluate_batch, evaluate_code,
                                   extract_code, parity_code)

TASKS = sample_tasks('backend')

def test_every_bundled_reference_succeeds():
    results = evaluate_batch(TASKS, [ANSWER_MARK + '\n' + t.ground_truth for t in TASKS])
    assert [t.function_name for t, r in zip(TASKS, results) if not r.success] == []

def test_fenced_answer_with_prose_imports_and_helpers_passes():
    t = TASKS[1]
    msg = f"Sure! Here it is.\n{ANSWER_MARK}\n```python\nimport math\n{t.ground_truth}\n\nprint('demo')\n```\nHope it helps."
    assert evaluate_code(t, msg).success

@pytest.mark.parametrize('body', ['return None', 'raise ValueError("no")', 'while True: pass', 'return [0] * 10**9'])
def test_wrong_or_hostile_answers_fail(body):
    t = TASKS[2]
    r = evaluate_code(t, f"{ANSWER_MARK}\ndef {t.function_name}(*a, **k):\n    {body}")
    assert r.tests_passed < 1.0 and not r.success
    assert len(r.passed) == len(t.test_cases)

def test_answer_missing_the_function_scores_zero():
    r = evaluate_code(TASKS[0], f"{ANSWER_MARK}\ndef something_else(): return 1")
    assert (r.tests_passed, r.code) == (0.0, None)

def test_always_equal_object_cannot_pass():
    t = TASKS[3]
    cheat = f"{ANSWER_MARK}\nclass E(int):\n    def __eq__(self, o): return True\ndef {t.function_name}(*a, **k):\n    return E(0)"
    assert evaluate_code(t, cheat).tests_passed == 0.0

def test_parity_mode_reproduces_exec_semantics():
    toy = BackendTask(ground_truth='def f(x):\n    return x + 1', problem_description='Add one.The signature of the function is: def f(x)',
                      test_cases={'test1': 'f(1)', 'test2': 'f(-3)'}, hidden_information='')
    helper = f"{ANSWER_MARK}\ndef g(x):\n    return x + 1\ndef f(x):\n    return g(x)"
    assert evaluate_code(toy, helper).success                        # correct evaluator: passes
    assert evaluate_code(toy, helper, parity=True).tests_passed == 0  # released semantics: helper invisible
    assert evaluate_code(toy, f"{ANSWER_MARK}\ndef f(x):\n    return x + 1", parity=True).success
    assert parity_code(f"{ANSWER_MARK}\nimport os\ndef f(x): return x", 'f') is None  # banned substring

def test_extraction_keeps_definitions_only():
    code = extract_code("I WANT TO ANSWER: ok\n```python\nX = 3\ndef f(a):\n    return a * X\nf(2)\nprint(f(3))\n```", 'f')
    assert code == 'X = 3\n\ndef f(a):\n    return a * X'

class Scripted:
    def __init__(self, replies): self.replies = list(replies)
    def generate(self, conversations, params=None): return [self.replies.pop(0) for _ in conversations]

def test_episode_ends_on_answer_or_turn_cap_and_truncates_replies():
    env = BackendEnv(Scripted(['y' * 999] * 5), BackendEnvConfig(max_turns=3))
    env.reset(TASKS[0])
    for i in range(2):
        obs, done = env.step(f'question {i}?')
        assert not done and len(obs[-1]['content']) == 400
    obs, done = env.step('question 3?')
    assert done and env.agent_turns == 3
    env.reset(TASKS[0])
    assert env.step(ANSWER_MARK + '\n' + TASKS[0].ground_truth)[1]
    assert env.trajectory()['success']

def test_prompt_templates_load_from_files(tmp_path):
    (tmp_path / 'agent.txt').write_text('TASK: {problem_description}')
    (tmp_path / 'sim.txt').write_text('REF: {hidden_information}\n{dialogue}')
    env = BackendEnv(Scripted([]), BackendEnvConfig(agent_template=str(tmp_path / 'agent.txt'), simulator_template=str(tmp_path / 'sim.txt')))
    obs = env.reset(TASKS[0])
    assert obs[0]['content'] == 'TASK: ' + TASKS[0].problem_description
    env.act('q?')
    assert env.simulator_messages()[0]['content'].startswith('REF: ' + TASKS[0].hidden_information)
    (tmp_path / 'bad.txt').write_text('no placeholders')
    with pytest.raises(ValueError, match='bad.txt'):
        BackendEnv(None, BackendEnvConfig(simulator_template=str(tmp_path / 'bad.txt')))
