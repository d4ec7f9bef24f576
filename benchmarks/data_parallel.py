"""SWEET-RL's candidate sampling on one vLLM engine in this process against `DataParallelBackend` with N engines, one per
worker process (one per GPU on a node), on the same states in the same run, with a stand-in engine: vLLM does not run
on a CPU. The stand-in is `benchmarks/batched_candidates.py`'s: installed as the `vllm` module (here, and in each
worker), so `sample_candidates`, `VLLMBackend.complete_groups`, the prompt tokenization and the data-parallel sharding
are the real code; each engine call sleeps its modelled decoding time (continuous batching, at most `max_num_seqs`
requests at once, a step costing `step_s + seq_s` per running request), scaled by `--time-scale`, standing for a GPU's
decode time. Replies are a function of prompt tokens and seed, so both paths must give the same records. The workers
are spawned (as on GPUs); their start-up (importing torch, building the engine) is timed apart from the sampling. The
engine model is an assumption, not a measurement of vLLM. Not a test.

    python benchmarks/data_parallel.py                      # 64 states x 16 candidates of up to 1,024 tokens, 4 engines
    python benchmarks/data_parallel.py --json benchmarks/results/data_parallel_cpu.json
"""
import argparse, functools, json, os, platform, random, time

from batched_candidates import MODEL, engine_seconds, request_tokens, stand_in_vllm, states


def stand_in_engine(model:str, time_scale:float):
    "Build, in a worker process, a `VLLMBackend` on the stand-in `vllm` module (the spec each worker is sent)."
    stand_in_vllm(MODEL, time_scale, [])
    from sweet_rl.base.models import VLLMBackend
    return VLLMBackend(model)


def modelled_seconds(records:list, n_candidates:int, max_new_tokens:int, engines:int) -> float:
    "The engine model's seconds of one call over all states, its requests shared over `engines` as `DataParallelBackend` shares them."
    from sweet_rl.base.models import SamplingParams, request_cost, shard_requests
    groups = [([r['prompt']] * n_candidates, int(r['id'][:8], 16)) for r in records]  # `sample_candidates`' seeds
    costs = [[request_cost(c, SamplingParams(max_new_tokens=max_new_tokens)) for c in convs] for convs, _ in groups]
    return max(engine_seconds([request_tokens(groups[g][1] + k, max_new_tokens) for g, a, b in runs for k in range(a, b)], **MODEL)
               for runs in shard_requests(costs, engines))


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, round(time.perf_counter() - t0, 3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='smollm2-135m', help='tokenizer and chat template of the prompts (no weights are loaded)')
    ap.add_argument('--engines', type=int, default=4, help='data-parallel engines (worker processes)')
    ap.add_argument('--states', type=int, default=64)
    ap.add_argument('--n-candidates', type=int, default=16, help='paper: 16')
    ap.add_argument('--max-new-tokens', type=int, default=1024, help='paper preset: candidate_tokens 1024')
    ap.add_argument('--states-per-call', type=int, default=64)
    ap.add_argument('--time-scale', type=float, default=0.2, help="share of the engine's modelled seconds slept")
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    if args.states_per_call < args.states: ap.error("--states-per-call below --states: modelled_speedup assumes one call over all states")
    from sweet_rl.base.models import DataParallelBackend, VLLMBackend
    from sweet_rl.methods.actor import CandidateConfig, sample_candidates
    turns = states(args.states, random.Random(0))
    cfg = CandidateConfig(n_candidates=args.n_candidates, max_new_tokens=args.max_new_tokens, states_per_call=args.states_per_call)
    sample = lambda engine: sample_candidates(engine, turns, cfg, progress=False)

    stand_in_vllm(MODEL, args.time_scale, [])
    with VLLMBackend(args.model) as one: one_records, one_s = timed(lambda: sample(one))
    spec = functools.partial(stand_in_engine, args.model, args.time_scale)
    dp, start_s = timed(lambda: DataParallelBackend(spec, [str(i) for i in range(args.engines)]))
    dp_records, dp_s = timed(lambda: sample(dp))
    _, close_s = timed(dp.close)
    out = dict(device=platform.processor() or 'cpu', cpus=os.cpu_count(), tokenizer=args.model, engines=args.engines, states=args.states,
               n_candidates=args.n_candidates, max_new_tokens=args.max_new_tokens, states_per_call=args.states_per_call,
               time_scale=args.time_scale, engine_model=MODEL, one_engine={'wall_s': one_s},
               data_parallel={'start_s': start_s, 'wall_s': dp_s, 'close_s': close_s},
               data_parallel_over_one_engine_wall=round(dp_s / one_s, 3), speedup=round(one_s / dp_s, 2),
               modelled_speedup=round(modelled_seconds(one_records, args.n_candidates, args.max_new_tokens, 1) /
                                      modelled_seconds(one_records, args.n_candidates, args.max_new_tokens, args.engines), 2),
               identical=one_records == dp_records,
               target='N engines faster than one on the same requests, identical records (start-up timed apart)')
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, 'w') as f: json.dump(out, f, indent=2); f.write('\n')


if __name__ == '__main__': main()
