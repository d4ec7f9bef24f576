"""Signal check of the small scale on a real agent: does anything in the SWEET-RL pipeline separate at 0.5B?

Before the small study spends CPU hours, this script measures on the packaged Qwen2.5-Coder-0.5B-Instruct
(agent and simulated human, temperature 1 for the agent) what the study's tables depend on, with 95% bootstrap intervals
over tasks (or pairs):
  1. offline data: the agent's own collaborative episodes on the bundled training tasks (several per task);
  2. zero-shot: the same agent on the 40 bundled test tasks (several episodes per task, tighter intervals);
  3. critics trained on the offline episodes' reward-gap pairs (the released frontend rule; few 0.5B episodes succeed):
     SWEET (Eq. 3, with training-time information), the same without it, and a value function; each judged by its
     accuracy on pairs of held-out episodes of the test tasks (pairs it never saw, from tasks it never saw);
  4. Best-of-N on the test tasks: N candidates per agent turn drawn once per state and shared, picked by each critic or
     at random (N = 1 is plain sampling). This is the paper's Figure 3a question on real candidates.
Every phase resumes from its files in --out (episodes JSONL, critic folders); metrics.json is rewritten after each phase
with its wall time, so a run stopped at a time limit keeps what it finished.

    python benchmarks/small_signal.py --out runs/signal                      # defaults: the GPU sizes below
    python benchmarks/small_signal.py --out /tmp/s --train-tasks 2 --samples 2 --eval-tasks 2 --eval-samples 1 \
        --model smollm2-135m --tokens 24 --sim-tokens 16 --max-turns 2 --critic-steps 2 --ns 1,2   # a CPU smoke run
"""
import argparse, json, platform, statistics, sys, time
from pathlib import Path


def ci(values, seed=0):
    "mean and 95% percentile-bootstrap interval, in percent."
    from sweet_rl.runs.evaluate import bootstrap_ci
    m, lo, hi = bootstrap_ci(values, seed=seed)
    return [round(100 * m, 1), round(100 * lo, 1), round(100 * hi, 1)]


def per_task(records, field):
    "One mean of `field` per task (samples of a task averaged), in task order of first appearance."
    from sweet_rl.base.core import stable_id
    groups = {}
    for r in records: groups.setdefault(stable_id(r['task']), []).append(float(r[field]))
    return [statistics.fmean(v) for v in groups.values()]


def outcome(records):
    "Tests passed and success (%, intervals over tasks), mean agent turns, episodes."
    turns = [sum(t['role'] == 'assistant' for t in r['dialogue_history']) for r in records]
    return {'tests_passed_pct': ci(per_task(records, 'tests_passed')), 'success_pct': ci(per_task(records, 'success')),
            'mean_turns': round(statistics.fmean(turns), 2), 'answered_first_turn_pct': round(100 * statistics.fmean(
                'I WANT TO ANSWER:' in next(t['content'] for t in r['dialogue_history'] if t['role'] == 'assistant')
                for r in records), 1), 'n_episodes': len(records), 'n_tasks': len(per_task(records, 'reward'))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', required=True, help='folder for episodes, critics and metrics.json (resumed when present)')
    ap.add_argument('--model', default='qwen2.5-coder-0.5b', help='agent, simulated human and critic backbone')
    ap.add_argument('--train-tasks', type=int, default=100, help='bundled training tasks for offline episodes (0: all 100)')
    ap.add_argument('--samples', type=int, default=4, help='offline episodes per training task')
    ap.add_argument('--eval-tasks', type=int, default=40, help='bundled test tasks')
    ap.add_argument('--eval-samples', type=int, default=4, help='zero-shot episodes per test task')
    ap.add_argument('--max-turns', type=int, default=5); ap.add_argument('--tokens', type=int, default=384)
    ap.add_argument('--sim-tokens', type=int, default=128); ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--critic-steps', type=int, default=60); ap.add_argument('--critic-batch', type=int, default=8)
    ap.add_argument('--critic-lr', type=float, default=1e-4); ap.add_argument('--max-length', type=int, default=2048)
    ap.add_argument('--critics', default='sweet,sweet_no_info,value')
    ap.add_argument('--ns', default='1,4,8', help='Best-of-N values (empty: skip Best-of-N)')
    ap.add_argument('--offline', default='', help='use these trajectories (JSONL) as the offline data instead of generating them')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args(argv)

    import torch
    from sweet_rl.base.core import atomic_write_text, read_jsonl, run_manifest, seed_everything
    from sweet_rl.methods.critic import CriticConfig, PairConfig, make_pairs, train_critic
    from sweet_rl.base.data import sample_tasks
    from sweet_rl.base.models import TransformersBackend
    from sweet_rl.base.rollout import CandidatePool, RolloutConfig, env_factory, run_rollouts
    from sweet_rl.methods.scorers import CriticScorer, RandomScorer

    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    seed_everything(a.seed)
    res = {'command': 'python benchmarks/small_signal.py ' + ' '.join(argv if argv is not None else sys.argv[1:]),
           'args': vars(a), 'manifest': run_manifest(a.seed), 'python': platform.python_version(),
           'device': torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu', 'seconds': {}}
    save = lambda: atomic_write_text(out / 'metrics.json', json.dumps(res, indent=1, sort_keys=True) + '\n')
    t0 = time.perf_counter()
    def phase(name):
        res['seconds'][name] = round(time.perf_counter() - t0 - sum(res['seconds'].values()), 1); save()

    agent = TransformersBackend(a.model, batch_size=a.batch)
    make_env = env_factory('backend', agent, max_turns=a.max_turns, simulator_max_new_tokens=a.sim_tokens)
    train = sample_tasks('backend', 'extra'); train = train[:a.train_tasks] if a.train_tasks else train
    test = sample_tasks('backend', 'test')[:a.eval_tasks]
    roll = lambda samples, n=1: RolloutConfig(samples_per_task=samples, max_new_tokens=a.tokens, temperature=1.0, seed=a.seed,
                                              batch_size=a.batch, n_candidates=n)
    phase('load')

    zero = run_rollouts(test, make_env, agent, roll(a.eval_samples), out_path=out / 'zero_shot.jsonl', tag=a.model)
    res['zero_shot'] = outcome(zero); phase('zero_shot_rollouts')
    if a.offline: offline = [r for _, r in read_jsonl(a.offline)]
    else: offline = run_rollouts(train, make_env, agent, roll(a.samples), out_path=out / 'offline.jsonl', tag=a.model)
    res['offline'] = outcome(offline); phase('offline_rollouts')

    rule = PairConfig.rule('frontend', seed=a.seed)  # rewards at least 0.1 apart; no rollout needs to succeed
    pairs, held = make_pairs(offline, rule), make_pairs(zero, rule)
    res['pairs'] = {'train': len(pairs), 'train_tasks': len({p['task_id'] for p in pairs}),
                    'heldout': len(held), 'heldout_tasks': len({p['task_id'] for p in held})}
    kinds = {'sweet': dict(head='sweet'), 'sweet_no_info': dict(head='sweet', use_hidden_info=False), 'value': dict(head='value')}
    ns = sorted({int(n) for n in a.ns.split(',') if n and int(n) > 1})  # N = 1 is plain sampling: the zero-shot episodes
    pool = CandidatePool(max(ns), out / 'pool.jsonl', tag=a.model) if ns else None
    res['critics'], res['best_of_n'] = {}, {}
    def best_of(name, scorer, values):
        for n in values:
            recs = run_rollouts(test, make_env, agent, roll(1, n), out_path=out / f'bon_{name}_n{n}.jsonl',
                                tag=f'{a.model}|pool{pool.size}', scorer=scorer, pool=pool)
            res['best_of_n'][f'{name}@{n}'] = outcome(recs); phase(f'best_of_n_{name}_{n}')
    if ns: best_of('random', RandomScorer(a.seed), ns[-1:])  # picking at random is sampling once: a check of the pool
    for name in [c for c in a.critics.split(',') if c and pairs]:  # no pairs: nothing to train a critic on (said in res['pairs'])
        cfg = CriticConfig(model=a.model, lr=a.critic_lr, batch_size=a.critic_batch, grad_accum=1, epochs=1, seed=a.seed,
                           max_length=a.max_length, **kinds[name])
        critic = train_critic(cfg, offline, out / 'critics' / name, pair_config=rule, max_steps=a.critic_steps, progress=False)
        if held:
            pos = critic.trajectory_scores([p['chosen'] for p in held]); neg = critic.trajectory_scores([p['rejected'] for p in held])
            hits = [float(x > y) + 0.5 * float(x == y) for x, y in zip(pos.tolist(), neg.tolist())]
            res['critics'][name] = {'heldout_pair_accuracy_pct': ci(hits), 'ties': sum(x == y for x, y in zip(pos.tolist(), neg.tolist())),
                                    'n_pairs': len(held)}
        phase(f'critic_{name}')
        if ns: best_of(name, CriticScorer(critic, name=name), ns)
        del critic
        if torch.cuda.is_available(): torch.cuda.empty_cache()
    res['total_seconds'] = round(time.perf_counter() - t0, 1); save()
    print(json.dumps({k: res[k] for k in res if k not in ('manifest', 'args')}, indent=1))


if __name__ == '__main__':
    main()
