"Backend evaluator: the one check too slow for the notebook (`nbs/10_backend.ipynb` holds the others)."
from sweet_rl.base.data import sample_tasks
from sweet_rl.envs.backend import ANSWER_MARK, evaluate_code


def test_endless_loop_answer_fails():
    "An answer that never returns fails every test on the time limit (about 10 s: one 1 s limit per test, in turn)."
    t = sample_tasks('backend')[2]
    r = evaluate_code(t, f"{ANSWER_MARK}\ndef {t.function_name}(*a, **k):\n    while True: pass")
    assert r.tests_passed < 1.0 and not r.success
    assert len(r.passed) == len(t.test_cases)
