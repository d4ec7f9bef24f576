"Rollouts: batching across episodes, official record format, resume after an interruption without loss (finished turns included) or duplicates."
import json

import pytest

from sweet_rl.base.data import Trajectory, load_trajectories, sample_tasks
from sweet_rl.envs.backend import ANSWER_MARK, BackendEnv, BackendEnvConfig
from sweet_rl.base.rollout import RolloutConfig, run_rollouts

TASKS = sample_tasks('backend')[:6]

class Agent:
    "Answers correctly at its second turn; can be told to crash after some calls (an interruption)."
    def __init__(self, crash_after=None): self.calls, self.crash_after, self.batch_sizes = 0, crash_after, []
    def generate(self, conversations, params=None):
        if self.crash_after is not None and self.calls >= self.crash_after: raise KeyboardInterrupt
        self.calls += 1; self.batch_sizes.append(len(conversations))
        return ['Which inputs?' if len(c) == 1 else ANSWER_MARK + '\n' + next(t.ground_truth for t in TASKS if t.problem_description in c[0]['content'])
                for c in conversations]

class Human:
    def generate(self, conversations, params=None): return ['Lists of ints.'] * len(conversations)

def make_env(): return BackendEnv(Human(), BackendEnvConfig())

def test_interrupted_run_resumes_without_loss_or_duplicates(tmp_path):
    out = tmp_path / 'traj.jsonl'
    with pytest.raises(KeyboardInterrupt):
        run_rollouts(TASKS, make_env, Agent(crash_after=3), RolloutConfig(batch_size=2), out_path=out, progress=False)
    finished = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    assert len(finished) == 2  # the first batch of two episodes finished before the interruption
    agent = Agent()
    trajs = run_rollouts(TASKS, make_env, agent, RolloutConfig(batch_size=2), out_path=out, progress=False)
    ids = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(TASKS) and ids[:2] == finished
    # the two episodes in flight (their first turn taken) resume at their second turn: 1 call; the last two run whole: 2
    assert agent.calls == 3 and agent.batch_sizes == [2, 2, 2]
    assert not (tmp_path / 'traj.live.json').exists()  # nothing left in flight
    assert all(t['success'] for t in trajs)

def test_records_load_as_official_trajectories(tmp_path):
    out = tmp_path / 'traj.jsonl'
    run_rollouts(TASKS, make_env, Agent(), RolloutConfig(batch_size=6, samples_per_task=2), out_path=out, progress=False)
    loaded = load_trajectories(out)
    assert len(loaded) == 12 and all(isinstance(t, Trajectory) for t in loaded)
    assert {t.reward for t in loaded} == {1.0}

def test_agent_turns_are_batched_across_episodes():
    agent = Agent()
    run_rollouts(TASKS, make_env, agent, RolloutConfig(batch_size=4), progress=False)
    assert agent.batch_sizes == [4, 4, 2, 2]

def test_config_change_gives_new_episode_ids(tmp_path):
    out = tmp_path / 'traj.jsonl'
    a = run_rollouts(TASKS[:2], make_env, Agent(), RolloutConfig(seed=0), out_path=out, progress=False)
    b = run_rollouts(TASKS[:2], make_env, Agent(), RolloutConfig(seed=1), out_path=out, progress=False)
    assert not {t['id'] for t in a} & {t['id'] for t in b}
    assert len(out.read_text().splitlines()) == 4


# ---------------------------------------------------------------- Best-of-N

import ast, random

import torch

from sweet_rl.base.core import stable_id
from sweet_rl.base.rollout import episode_id, mutate_code, mutate_html, script_plan, scripted_rollouts
from sweet_rl.methods.scorers import RandomScorer

N = 3

class CandidateAgent:
    "Asks at its first turn, answers with the reference at its second; every candidate carries its sample seed."
    def __init__(self, crash_after=None): self.calls, self.crash_after, self.batch_sizes = 0, crash_after, []
    def generate(self, conversations, params=None):
        if self.crash_after is not None and self.calls >= self.crash_after: raise KeyboardInterrupt
        self.calls += 1; self.batch_sizes.append(len(conversations))
        def reply(c, s):
            if len(c) == 1: return f'Which inputs? (seed {s})'
            return ANSWER_MARK + '\n' + next(t.ground_truth for t in TASKS if t.problem_description in c[0]['content']) + f'\n# seed {s}'
        return [reply(c, params.seed + i) for i, c in enumerate(conversations)]

class PickIndex:
    "Prefers candidate `best` (as a tensor of scores); remembers the candidates it saw for each (task, history)."
    def __init__(self, best): self.best, self.seen = best, {}
    def score(self, task, history, candidates):
        assert isinstance(task, dict) and all(set(t) == {'role', 'content'} for t in history)
        self.seen[(task['problem_description'], len(history))] = list(candidates)
        return torch.tensor([1.0 if i == self.best else 0.0 for i in range(len(candidates))])

class Flat:
    def score(self, task, history, candidates): return [0.5] * len(candidates)

def test_best_of_n_acts_on_the_scorers_choice_with_batched_calls():
    agent, scorer = CandidateAgent(), PickIndex(2)
    trajs = run_rollouts(TASKS, make_env, agent, RolloutConfig(batch_size=4, n_candidates=N), scorer=scorer, progress=False)
    assert agent.batch_sizes == [4 * N, 4 * N, 2 * N, 2 * N]  # one call per turn over every live episode's N candidates
    for t in trajs:
        assert t['success'] and t['bon_scorer'] == 'PickIndex'
        assert [b['turn'] for b in t['bon']] == [0, 1] and all(b['chosen'] == 2 and len(b['scores']) == N for b in t['bon'])
        acted = [d['content'] for d in t['dialogue_history'] if d['role'] == 'assistant']
        assert acted == [scorer.seen[(t['task']['problem_description'], h)][2] for h in (1, 3)]  # the saved dialogue so far, request first
    assert len({d['content'] for t in trajs for d in t['dialogue_history'] if d['role'] == 'assistant'}) == 2 * len(TASKS)

def test_best_of_n_ties_go_to_the_first_candidate():
    trajs = run_rollouts(TASKS[:2], make_env, CandidateAgent(), RolloutConfig(n_candidates=N), scorer=Flat(), progress=False)
    assert all(b['chosen'] == 0 for t in trajs for b in t['bon'])
    assert trajs[0]['dialogue_history'][1]['content'] == 'Which inputs? (seed 0)'  # after the request

def test_best_of_n_resumes_and_has_its_own_ids(tmp_path):
    out, cfg = tmp_path / 'bon.jsonl', RolloutConfig(batch_size=2, n_candidates=N)
    with pytest.raises(KeyboardInterrupt):
        run_rollouts(TASKS, make_env, CandidateAgent(crash_after=3), cfg, out_path=out, scorer=PickIndex(1), progress=False)
    finished = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    assert len(finished) == 2
    agent = CandidateAgent()
    trajs = run_rollouts(TASKS, make_env, agent, cfg, out_path=out, scorer=PickIndex(1), progress=False)
    ids = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    # the two episodes in flight resume at their second turn (1 call), the last two run whole (2 calls)
    assert len(ids) == len(set(ids)) == len(TASKS) and ids[:2] == finished and agent.calls == 3
    assert all(len(t['bon']) == 2 and t['success'] for t in trajs)  # a resumed episode keeps its first turn's choice
    plain = {episode_id(t, 0, RolloutConfig(batch_size=2)) for t in TASKS}
    other = {episode_id(t, 0, cfg, scorer=RandomScorer(0)) for t in TASKS}
    assert not plain & set(ids) and not other & set(ids)
    assert len(load_trajectories(out)) == len(TASKS)  # the extra fields do not break the official loader

def test_plain_rollout_ids_are_unchanged_by_best_of_n():
    cfg = RolloutConfig()
    old = {k: v for k, v in cfg.to_dict().items() if k != 'n_candidates'}
    assert episode_id(TASKS[0], 0, cfg, 'm') == stable_id({'task': TASKS[0].to_dict(), 'sample': 0, 'config': old, 'tag': 'm'})
    assert episode_id(TASKS[0], 0, cfg, 'm', scorer=Flat()) == episode_id(TASKS[0], 0, cfg, 'm')

def test_best_of_n_errors():
    with pytest.raises(ValueError, match='needs a scorer'):
        run_rollouts(TASKS[:1], make_env, CandidateAgent(), RolloutConfig(n_candidates=2), progress=False)
    class Short:
        def score(self, task, history, candidates): return [1.0]
    with pytest.raises(ValueError, match='returned 1 scores for 3 candidates'):
        run_rollouts(TASKS[:1], make_env, CandidateAgent(), RolloutConfig(n_candidates=3), scorer=Short(), progress=False)

def test_random_scorer_is_seeded_and_uniform():
    task, hist, cands = TASKS[0].to_dict(), [{'role': 'assistant', 'content': 'q'}], [f'c{i}' for i in range(200)]
    a = RandomScorer(0).score(task, hist, cands)
    assert a == RandomScorer(0).score(task, hist, cands) and a != RandomScorer(1).score(task, hist, cands)
    assert all(0 <= s < 1 for s in a) and 0.4 < sum(a) / len(a) < 0.6
    picks = [max(range(4), key=RandomScorer(s).score(task, [], list('abcd')).__getitem__) for s in range(400)]
    assert all(60 < picks.count(i) < 140 for i in range(4))  # the choice is uniform over candidates


# ---------------------------------------------------------------- scripted offline trajectories

ALL_BACKEND = sample_tasks('backend')

class CountingHuman:
    "Stub simulator that counts calls and batch sizes, and can crash (an interruption)."
    def __init__(self, crash_after=None): self.calls, self.sizes, self.crash_after = 0, [], crash_after
    def generate(self, conversations, params=None):
        if self.crash_after is not None and self.calls >= self.crash_after: raise KeyboardInterrupt
        self.calls += 1; self.sizes.append(len(conversations))
        return ['I do not mind.'] * len(conversations)

def test_backend_mutants_parse_and_differ():
    for i, t in enumerate(ALL_BACKEND):
        for s in range(3):
            mutant, what = mutate_code(t.ground_truth, random.Random(f'{i}:{s}'))
            ast.parse(mutant)
            assert mutant != ast.unparse(ast.parse(t.ground_truth)) and what.split(':')[0] in (
                'comparison', 'arithmetic', 'constant', 'return', 'drop', 'condition')
    with pytest.raises(ValueError, match='does not parse'): mutate_code('def f(:', random.Random(0))

def test_scripted_rollouts_are_deterministic():
    run = lambda seed: scripted_rollouts(ALL_BACKEND[:6], lambda: BackendEnv(CountingHuman()), samples_per_task=2, seed=seed, progress=False)
    a, b, c = run(0), run(0), run(1)
    assert a == b and [r['id'] for r in a] != [r['id'] for r in c]
    assert [r['script'] for r in a] != [r['script'] for r in c]
    assert script_plan(ALL_BACKEND[0], 1, seed=0) == script_plan(ALL_BACKEND[0], 1, seed=0)

def test_scripted_references_succeed_and_mutants_score_lower(tmp_path):
    human = CountingHuman()
    recs = scripted_rollouts(ALL_BACKEND, lambda: BackendEnv(human), samples_per_task=2, p_reference=0.5, batch_size=8,
                             out_path=tmp_path / 's.jsonl', progress=False)
    assert len(recs) == 2 * len(ALL_BACKEND) and max(human.sizes) <= 8 and max(human.sizes) > 1  # simulator calls are batched
    ref = [r for r in recs if r['script']['answer'] == 'reference']
    mut = [r for r in recs if r['script']['answer'] == 'mutant']
    assert len(ref) >= 20 and len(mut) >= 20
    assert all(r['reward'] == 1.0 and r['success'] and r['script']['mutation'] is None for r in ref)
    assert sum(r['success'] for r in mut) <= len(mut) / 4 and sum(r['reward'] for r in mut) / len(mut) < 0.6
    for r in recs:
        q = r['script']['questions']
        assert 0 <= q <= 2 and len(r['dialogue_history']) == 2 * q + 2  # the request, q questions and replies, the answer
        assert r['dialogue_history'][-1]['content'].startswith(ANSWER_MARK)
        assert {'id', 'sample', 'task', 'dialogue_history', 'answer', 'reward', 'tests_passed', 'success', 'script'} <= set(r)
    assert len(load_trajectories(tmp_path / 's.jsonl')) == len(recs)

def test_scripted_rollouts_resume(tmp_path):
    out, kw = tmp_path / 's.jsonl', dict(samples_per_task=3, max_questions=2, p_reference=0.5, batch_size=3, progress=False)
    crashing = CountingHuman(crash_after=2)
    with pytest.raises(KeyboardInterrupt):
        scripted_rollouts(TASKS, lambda: BackendEnv(crashing), out_path=out, **kw)
    finished = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    assert 0 < len(finished) < 3 * len(TASKS)
    recs = scripted_rollouts(TASKS, lambda: BackendEnv(CountingHuman()), out_path=out, **kw)
    ids = [json.loads(l)['id'] for l in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 3 * len(TASKS) and ids[:len(finished)] == finished
    human = CountingHuman()
    assert scripted_rollouts(TASKS, lambda: BackendEnv(human), out_path=out, **kw) == recs and human.calls == 0
    assert recs == scripted_rollouts(TASKS, lambda: BackendEnv(CountingHuman()), **kw)  # same as one uninterrupted run

def test_scripted_questions_fit_the_turn_cap():
    recs = scripted_rollouts(ALL_BACKEND[:8], lambda: BackendEnv(CountingHuman(), BackendEnvConfig(max_turns=2)),
                             max_questions=3, p_reference=1.0, progress=False)
    assert all(r['script']['questions'] <= 1 and r['success'] for r in recs)

def test_frontend_mutants_differ_render_and_score_lower():
    from sweet_rl.envs.frontend import FrontendEnv, FrontendEnvConfig
    from sweet_rl.base.render import Renderer
    ftasks = sample_tasks('frontend')[:3]
    for t in ftasks:
        for s in range(5):
            page, what = mutate_html(t.ground_truth, random.Random(s))
            assert page != t.ground_truth and what
    with Renderer(pages=2) as r:
        recs = scripted_rollouts(ftasks, lambda: FrontendEnv(CountingHuman(), FrontendEnvConfig(metric='visual'), renderer=r),
                                 samples_per_task=2, max_questions=1, p_reference=0.3, progress=False)
        mut = [rec for rec in recs if rec['script']['answer'] == 'mutant']
        shots = r.render_many([rec['answer'] for rec in mut] + [rec['task']['ground_truth'] for rec in mut])
    ref = [rec['similarity'] for rec in recs if rec['script']['answer'] == 'reference']
    assert ref and mut and all(s > 0.999 for s in ref)  # the reference answer renders exactly as the reference
    assert all(rec['answer'] != rec['task']['ground_truth'] and 0 < rec['similarity'] <= 1 for rec in mut)
    assert all(a.tobytes() != b.tobytes() for a, b in zip(shots[:len(mut)], shots[len(mut):]))  # every mutant renders differently
    assert sum(rec['similarity'] for rec in mut) / len(mut) < 0.995  # and the metric sees it on average
