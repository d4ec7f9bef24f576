"""Rollout checks that the notebook nbs/07_rollout.ipynb does not hold: the frontend mutants' full render check (about 6 s,
Chromium), and `RandomScorer`'s uniformity (its home is nbs/22_scorers.ipynb)."""
import random

from sweet_rl.base.data import sample_tasks
from sweet_rl.base.rollout import mutate_html, scripted_rollouts
from sweet_rl.methods.scorers import RandomScorer


def test_random_scorer_is_seeded_and_uniform():
    task, hist, cands = sample_tasks('backend')[0].to_dict(), [{'role': 'assistant', 'content': 'q'}], [f'c{i}' for i in range(200)]
    a = RandomScorer(0).score(task, hist, cands)
    assert a == RandomScorer(0).score(task, hist, cands) and a != RandomScorer(1).score(task, hist, cands)
    assert all(0 <= s < 1 for s in a) and 0.4 < sum(a) / len(a) < 0.6
    picks = [max(range(4), key=RandomScorer(s).score(task, [], list('abcd')).__getitem__) for s in range(400)]
    assert all(60 < picks.count(i) < 140 for i in range(4))  # the choice is uniform over candidates


class CountingHuman:
    "Stub simulator that counts calls and batch sizes."
    def __init__(self): self.calls, self.sizes = 0, []
    def generate(self, conversations, params=None):
        self.calls += 1; self.sizes.append(len(conversations))
        return ['I do not mind.'] * len(conversations)

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
