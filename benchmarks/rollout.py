"""Episodes per minute of 10-turn collaborative backend episodes with and without prefix caching, and their ratio (target in
target: at least 2x). Same model, tasks, seeds and settings for both, measured in the same run; prints JSON.

Agent and simulated human are served by one `TransformersBackend` (default qwen2.5-coder-0.5b), so in the cached variant
one prefix store serves both roles; the other variant is the same backend with `prefix_cache=False` (`model.generate` on
whole prompts). For every episode to last `--turns` agent turns the agent must keep asking: `Role` wraps the agent's
backend and deletes 'I WANT TO ANSWER:' from its replies, so no message ends an episode early (the last message is scored
as the answer all the same; this measures speed, not success). Both roles decode greedily by default, so the two variants
produce the same dialogues up to floating-point ties and do the same work: the JSON reports the tokens each generated
and the share of agent messages that came out identical.

    OMP_NUM_THREADS=1 python benchmarks/rollout.py --json benchmarks/results/rollout_prefix_cache_cpu.json
    python benchmarks/rollout.py --compare batching --model smollm2-135m --turns 2 --tokens 48   # batched vs one at a time (target: at least 3x)
"""
import argparse, datetime, json, platform, subprocess, time
from pathlib import Path

import torch

from sweet_rl.base.data import sample_tasks
from sweet_rl.envs.backend import ANSWER_MARK, BackendEnv, BackendEnvConfig
from sweet_rl.base.models import GenerationBackend, SamplingParams, TransformersBackend, load_model
from sweet_rl.base.rollout import RolloutConfig, run_rollouts

ROOT = Path(__file__).resolve().parents[1]


class Role(GenerationBackend):
    "One role's view of a shared backend: counts calls and generated tokens, and can delete the answer marker from replies."
    def __init__(self, backend, keep_asking:bool=False): # the shared backend; delete ANSWER_MARK from every reply
        self.backend, self.keep_asking, self.calls, self.tokens = backend, keep_asking, 0, 0

    def complete(self, conversations, params=None):
        outs = self.backend.complete(conversations, params)
        self.calls += 1
        self.tokens += sum(o.num_tokens for o in outs)
        if self.keep_asking:
            for o in outs: o.text = o.text.replace(ANSWER_MARK, '')
        return outs


def episodes(backend, tasks, a) -> dict:
    "Run one variant: `len(tasks)` episodes advanced together; wall time, rate, work done and the dialogues."
    agent, simulator = Role(backend, keep_asking=True), Role(backend)
    env_cfg = BackendEnvConfig(max_turns=a.turns, simulator_max_new_tokens=a.tokens)
    cfg = RolloutConfig(max_new_tokens=a.tokens, temperature=a.temperature, batch_size=len(tasks), seed=a.seed)
    t = time.perf_counter()
    trajs = run_rollouts(tasks, lambda: BackendEnv(simulator, env_cfg), agent, cfg, progress=False)
    dt = time.perf_counter() - t
    turns = [sum(m['role'] == 'assistant' for m in r['dialogue_history']) for r in trajs]
    return {'seconds': round(dt, 1), 'episodes_per_min': round(60 * len(trajs) / dt, 3), 'mean_agent_turns': sum(turns) / len(turns),
            'agent_tokens': agent.tokens, 'simulator_tokens': simulator.tokens, 'calls': agent.calls + simulator.calls,
            'dialogues': [[m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant'] for r in trajs]}


def compare_prefix_cache(a) -> dict:
    model, tok = load_model(a.model, dtype=a.dtype)
    tasks = sample_tasks('backend')[:a.episodes]
    runs = {}
    for name, on in (('without_prefix_cache', False), ('with_prefix_cache', True)):
        backend = TransformersBackend(model, tok, batch_size=a.episodes, prefix_cache=on)
        backend.generate([[{'role': 'user', 'content': 'Say hi.'}]], SamplingParams(max_new_tokens=4, temperature=0))  # warm-up
        backend.cache_stats = dict.fromkeys(backend.cache_stats, 0)
        runs[name] = episodes(backend, tasks, a)
        if on: runs[name]['cache_stats'] = backend.cache_stats
    off, on = runs['without_prefix_cache'], runs['with_prefix_cache']
    pairs = [(x, y) for d0, d1 in zip(off.pop('dialogues'), on.pop('dialogues')) for x, y in zip(d0, d1)]
    return {'model': a.model, 'dtype': str(model.dtype).replace('torch.', ''), 'episodes': a.episodes, 'max_turns': a.turns,
            'max_new_tokens': a.tokens, 'temperature': a.temperature, 'seed': a.seed, **runs,
            'identical_agent_messages': f"{sum(x == y for x, y in pairs)}/{len(pairs)}",
            'ratio': round(on['episodes_per_min'] / off['episodes_per_min'], 2)}


def compare_batching(a) -> dict:
    "The batching comparison: all episodes advanced together vs one episode at a time."
    from sweet_rl.base.models import make_backend
    model = make_backend(a.model)
    tasks = sample_tasks('backend')[:a.episodes]
    env_cfg = BackendEnvConfig(max_turns=a.turns, simulator_max_new_tokens=a.tokens)
    make_env = lambda: BackendEnv(model, env_cfg)
    run_rollouts(tasks[:1], make_env, model, RolloutConfig(max_new_tokens=8, batch_size=1), progress=False)  # warm-up
    out = {'model': a.model, 'episodes': a.episodes, 'max_turns': a.turns, 'max_new_tokens': a.tokens}
    for name, bs in (('sequential', 1), ('batched', a.episodes)):
        t = time.perf_counter()
        trajs = run_rollouts(tasks, make_env, model, RolloutConfig(max_new_tokens=a.tokens, batch_size=bs, seed=0), progress=False)
        dt = time.perf_counter() - t
        out[f'{name}_s'] = dt; out[f'{name}_episodes_per_min'] = 60 * len(trajs) / dt
    out['speedup'] = out['batched_episodes_per_min'] / out['sequential_episodes_per_min']
    return out


def machine() -> dict:
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), platform.processor())
    commit = subprocess.run(['git', 'rev-parse', '--short=10', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {'date': datetime.date.today().isoformat(), 'commit': commit, 'torch': torch.__version__, 'python': platform.python_version(),
            'device': torch.cuda.get_device_name() if torch.cuda.is_available() else f'cpu: {cpu}',
            'torch_threads': torch.get_num_threads()}


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--compare', choices=['prefix-cache', 'batching'], default='prefix-cache')
    ap.add_argument('--model', default='qwen2.5-coder-0.5b'); ap.add_argument('--dtype', default='auto')
    ap.add_argument('--episodes', type=int, default=8, help='episodes, all advanced together')
    ap.add_argument('--turns', type=int, default=10, help='agent turns per episode')
    ap.add_argument('--tokens', type=int, default=64, help='most tokens per agent or simulator reply')
    ap.add_argument('--temperature', type=float, default=0.0, help='agent temperature (the simulator is greedy)')
    ap.add_argument('--seed', type=int, default=0); ap.add_argument('--json', help='also write the results to this file')
    a = ap.parse_args()
    out = {**machine(), 'command': 'python benchmarks/rollout.py ' + ' '.join(__import__('sys').argv[1:]),
           **(compare_prefix_cache(a) if a.compare == 'prefix-cache' else compare_batching(a))}
    text = json.dumps(out, indent=2)
    print(text)
    if a.json: Path(a.json).write_text(text + '\n')
