"""The exports (`nbs/39_exports.ipynb`) on ColBench's frontend, which needs Chromium: through OpenEnv, TRL's environment
factory and verifiers, a frontend episode gives the environment's own page-similarity reward and shows no reference
page. Clarify, search and the backend (and a two-step GRPO run) are checked in the notebook; clarify through verifiers
v1's user-simulator environment, end to end with both seats scripted, is checked here too."""
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


class Recording(GenerationBackend):
    "A scripted agent that keeps every conversation it is sent (what the model behind a seat would see)."
    def __init__(self, agent): self.agent, self.seen = agent, []
    def complete(self, conversations, params=None):
        self.seen += conversations
        return self.agent.complete(conversations, params)


class Shrugger(GenerationBackend):
    "A stand-in for an LLM user: states the request it finds in its persona, then knows nothing and never ends the talk."
    def complete(self, conversations, params=None):
        def reply(c):  # the v1 user seat opens on [its persona, the greeting]
            if len(c) != 2: return "I don't know."
            return c[0]['content'].split('You asked the assistant for this:\n', 1)[1].split('\n\nWhat you know', 1)[0]
        return [Completion(reply(c), 3, 'stop') for c in conversations]


def test_clarify_through_verifiers_user_sim():
    """Two v1 user-sim episodes offline, both seats scripted: with the environment's own person as the user, and with a
    user who never says it is done (the environment's episode end stops the exchange). The assistant's reward is the one
    the environment gives when it plays the same messages itself, and the reference never reaches the assistant."""
    from sweet_rl.envs.clarify import ScriptedClarifier, generate_tasks
    from sweet_rl.runs.exports import UserSimExport, episode_reward, seat_trace

    tasks = generate_tasks(4, seed=0)
    export = UserSimExport('clarify', [tasks[0], tasks[2]])
    agent = Recording(ScriptedClarifier(p_ask=1.0))
    episodes = export.episodes_sync(agent, task_indices=[0]) + export.episodes_sync(agent, Shrugger(), task_indices=[1])
    rewards = []
    for ep, task, human in zip(episodes, export.tasks, [None, Shrugger()]):
        assistant, user = seat_trace(ep), seat_trace(ep, 'user')
        assert ep.ok and ep.errors == []
        said = [m.content for m in assistant.messages if m.role == 'assistant']
        heard = [m.content for m in assistant.messages if m.role == 'user'][1:]  # after the user's opening request
        direct = make_env('clarify') if human is None else make_env('clarify', human, human='llm')
        direct.reset(task)
        for m in said:
            if direct.step(m)[1]: break
        assert direct.agent_turns == len(said) and direct.done  # the exchange ended where the environment's episode did
        assert heard == [t['content'] for t in direct.history[2::2]]  # the same dialogue
        assert assistant.reward == pytest.approx(episode_reward(direct))
        rewards.append(assistant.reward)
        assert task.hidden_information in user.messages[0].content  # the user's persona holds the reference ...
        shown = [m.content for m in assistant.messages if m.role != 'assistant']
        assert shown and not any(task.hidden_information in t for t in shown)  # ... the assistant's trace never shows it
    assert [seat_trace(ep).stop_condition for ep in episodes] == ['user_closed', 'episode_over']
    assert rewards[0] != rewards[1]  # two different outcomes, both matched: no constant reward passes
    shown_to_model = [m['content'] for c in agent.seen for m in c if m['role'] != 'assistant']  # every request's inputs
    assert len(agent.seen) == 6 and not any(t.hidden_information in s for t in export.tasks for s in shown_to_model)
