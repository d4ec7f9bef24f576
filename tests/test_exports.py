"""The exports (`nbs/39_exports.ipynb`) on ColBench's frontend, which needs Chromium: through OpenEnv, TRL's environment
factory and verifiers, a frontend episode gives the environment's own page-similarity reward and shows no reference
page. Clarify, search and the backend (and a two-step GRPO run) are checked in the notebook."""
import json

import pytest

from sweet_rl.base.data import ANSWER_MARK, sample_tasks
from sweet_rl.base.models import Completion, GenerationBackend
from sweet_rl.base.protocol import make_env
from sweet_rl.runs.exports import DialogueAction, OpenEnvDialogue, TRLExport


class DescribingHuman(GenerationBackend):
    "A stand-in for the simulated human: the same short remark whatever the page."
    def complete(self, conversations, params=None): return [Completion('Make the header darker.', 4, 'stop') for _ in conversations]


@pytest.fixture(scope='module')
def tasks(): return sample_tasks('frontend')[:2]


def messages(task) -> list[str]:
    "The agent's two messages: a blank first draft, then the reference page as its answer."
    return ['```html\n<html><body><h1>Draft</h1></body></html>\n```', f"{ANSWER_MARK}\n```html\n{task.ground_truth}\n```"]


def test_frontend_through_openenv(tasks):
    export = OpenEnvDialogue('frontend', tasks, simulator=DescribingHuman(), max_turns=2)
    seen = [export.reset(task_index=0)]
    for m in messages(tasks[0]): seen.append(export.step(DialogueAction(message=m)))
    assert [o.done for o in seen] == [False, False, True]
    assert seen[1].messages[-1] == {'role': 'user', 'content': 'Make the header darker.'} and seen[1].reward == 0.0
    env = make_env('frontend', DescribingHuman(), max_turns=2)
    env.replay(tasks[0], export.state.history[1:])
    assert seen[-1].reward == pytest.approx(env.trajectory()['reward']) and seen[-1].reward > 0.9  # the reference page scores ~1
    assert tasks[0].ground_truth in export.state.task.values()
    assert not any(tasks[0].ground_truth in m['content'] for o in seen for m in o.messages if m['role'] == 'user')
    assert not any(json.dumps(tasks[0].ground_truth) in json.dumps(o.metadata) for o in seen)


def test_frontend_through_trl_factory(tasks):
    export = TRLExport('frontend', tasks, simulator=DescribingHuman(), max_turns=2)
    rows = export.dataset()
    assert rows['task_index'] == [0, 1] and rows[1]['prompt'][0]['content'].endswith(tasks[1].problem_description)
    rollout = export()
    rollout.reset(**rows[1])
    assert [rollout.send(m) for m in messages(tasks[1])] == ['Make the header darker.', 'The conversation is over.']
    assert rollout.get_reward() > 0.9


def test_frontend_through_verifiers(tasks):
    from sweet_rl.runs.exports import GenerationClient, VerifiersDialogue

    class Drafter(GenerationBackend):
        "The agent of `messages`: a draft first, then the reference page."
        def complete(self, conversations, params=None):
            return [Completion(messages(tasks[0])[min(sum(m['role'] == 'assistant' for m in c), 1)], 9, 'stop') for c in conversations]

    out = VerifiersDialogue('frontend', tasks[:1], simulator=DescribingHuman(), max_turns=2).evaluate_sync(
        GenerationClient(Drafter()), model='scripted', num_examples=1)['outputs'][0]
    assert out['stop_condition'] == 'episode_over' and [m['role'] for m in out['completion']] == ['assistant', 'user', 'assistant']
    assert out['completion'][1]['content'] == 'Make the header darker.' and out['reward'] > 0.9
