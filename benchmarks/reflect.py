"""Reflect-RL environment steps per second with and without the reflection cache (same model, seeds and sampling).

The frozen reflection model writes greedily, so a state always gets the same reflection and `Reflector` computes it
once. Online RL revisits states (Taxi has 500; every iteration restarts from training starts), so the cache saves
generation. Both variants play the same episodes (seeded sampling; identical reflections either way), several rounds
over the same seeds as RL iterations do, and the script prints steps/s of each and their ratio as JSON.

    python benchmarks/reflect.py                    # SmolLM2-135M as policy and reflection model, pickup curriculum
    python benchmarks/reflect.py --rounds 5 --episodes 8 --env explore --curriculum depth1
"""
import argparse, json, platform, time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='smollm2-135m'); ap.add_argument('--env', default='taxi')
    ap.add_argument('--curriculum', default='pickup'); ap.add_argument('--episodes', type=int, default=4)
    ap.add_argument('--rounds', type=int, default=3, help='passes over the same seeds (RL iterations revisit states)')
    ap.add_argument('--tokens', type=int, default=40, help='reflection budget')
    a = ap.parse_args(argv)
    import torch
    from sweet_rl.methods.reflect import ReflectConfig, Reflector, choice_env, episode_seeds, lora_lm, play
    c = ReflectConfig(env=a.env, curriculum=a.curriculum, model=a.model, reflection_model=a.model, reflection_tokens=a.tokens)
    policy, tok = lora_lm(a.model, c)
    refl_model, rtok = lora_lm(a.model, c)
    seeds = episode_seeds(c, 'train', a.episodes)
    envs = [choice_env(c, 'train') for _ in seeds]
    res = {'command': 'python benchmarks/reflect.py ' + ' '.join(argv or []), 'model': a.model, 'env': a.env,
           'curriculum': a.curriculum, 'episodes': a.episodes, 'rounds': a.rounds, 'python': platform.python_version(),
           'torch_threads': torch.get_num_threads()}
    actions = {}
    for cache in (True, False):
        reflector, gen, steps = Reflector(refl_model, rtok, a.tokens, cache=cache), torch.Generator().manual_seed(0), 0
        t = time.perf_counter(); taken = []
        for _ in range(a.rounds):
            eps = play(policy, tok, envs, seeds, c, reflector, generator=gen)
            steps += sum(len(e['steps']) for e in eps); taken += [s['action'] for e in eps for s in e['steps']]
        dt = time.perf_counter() - t
        actions[cache] = taken
        res['cached' if cache else 'uncached'] = {'steps': steps, 'seconds': round(dt, 2), 'steps_per_s': round(steps / dt, 3),
                                                   'reflections_generated': reflector.generated}
    res['same_episodes'] = actions[True] == actions[False]
    res['ratio'] = round(res['cached']['steps_per_s'] / res['uncached']['steps_per_s'], 2)
    print(json.dumps(res, indent=1))


if __name__ == '__main__':
    main()
