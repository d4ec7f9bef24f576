"""Online MT-GRPO throughput: optimizer steps per minute, and how a step's time splits between rollouts (generation with
the current weights, the environment, rewards) and the update (log-probabilities, loss, backward, optimizer).

The search setting of the paper (country facts, BM25 tool, two agent turns) with the packaged model, LoRA, one process.
The first step is left out of the rates (it warms up generation and allocation); timings come from the run's steps.jsonl.
Usage: python benchmarks/mtgrpo.py [--model smollm2-135m] [--steps 4] [--group-size 4] [--batch-size 2] [--tokens 32]
                                   [--mode mt] [--dtype auto]
"""
import argparse, json, statistics, tempfile, time
from pathlib import Path

from sweet_rl.methods.mtgrpo import MTGRPOConfig, online_setting, train_mtgrpo

if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', default='smollm2-135m'); ap.add_argument('--steps', type=int, default=4)
    ap.add_argument('--group-size', type=int, default=4); ap.add_argument('--batch-size', type=int, default=2)
    ap.add_argument('--tokens', type=int, default=32); ap.add_argument('--mode', default='mt'); ap.add_argument('--dtype', default='auto')
    a = ap.parse_args()
    cfg = MTGRPOConfig(model=a.model, mode=a.mode, steps=a.steps, group_size=a.group_size, batch_size=a.batch_size,
                       max_new_tokens=a.tokens, dtype=a.dtype, lr=1e-4, setting={'question_kinds': ['capital'], 'top_k': 1}, save_steps=10_000,
                       save_episodes=False)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        train_mtgrpo(cfg, online_setting(cfg), Path(d) / 'run', progress=False)
        wall = time.perf_counter() - t
        steps = [json.loads(l) for l in (Path(d) / 'run' / 'steps.jsonl').read_text().splitlines()]
    timed = steps[1:] or steps
    rollout, update = statistics.fmean(s['rollout_s'] for s in timed), statistics.fmean(s['update_s'] for s in timed)
    out = {'model': a.model, 'mode': a.mode, 'dtype': a.dtype, 'steps': a.steps, 'episodes_per_step': a.group_size * a.batch_size,
           'max_new_tokens': a.tokens, 'agent_tokens_per_episode': statistics.fmean(s['agent_tokens'] for s in timed),
           'rollout_s_per_step': round(rollout, 2), 'update_s_per_step': round(update, 2),
           'rollout_share': round(rollout / (rollout + update), 3), 'steps_per_min': round(60 / (rollout + update), 2),
           'episodes_per_min': round(60 * a.group_size * a.batch_size / (rollout + update), 1),
           'wall_s_with_model_loading': round(wall, 1)}
    print(json.dumps(out, indent=2))
