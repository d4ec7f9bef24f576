"""Critic training under `accelerate launch`: 2 CPU processes (gloo) follow the loss trajectory of 1 process at the same global batch.

Arrangement. Both runs train on the same 8 synthetic pairs with global batch 4 = 2 x 1 process x accumulation 2 (plain
`python -m sweet_rl.runs.launch`) = 1 x 2 processes x accumulation 2 (`accelerate launch`, configs/accelerate/cpu_2proc.yaml).
accelerate's seeded sampler draws the same permutation in every process and deals micro-batches out in turn, so
step k of both runs trains on examples 4k..4k+3 of that permutation (`step_examples` replays it; 8 is a multiple of 4,
so no step is padded with repeats). Each micro-batch loss is a mean over equally many pairs, DDP averages the gradients
of the 2 processes, and the logged loss and statistics are averaged over processes: both runs compute the same
quantities in float32, with the same seed, LoRA initialisation and learning-rate schedule.

Tolerance. The runs cannot agree bit for bit: sequences are padded to other lengths (micro-batches of 1 pair vs 2),
sums run in other orders, and gloo's all-reduce adds the two halves of the gradient. Those are float32 rounding
differences, ~1e-7 relative; measured over 3 steps here: loss equal to 1e-7, largest logged difference 2e-6 (the BT
margin, about 1.2 at step 3). We allow ATOL = 1e-4 absolute on the loss (about 0.7) and on every logged statistic:
50x the measured spread, and below what any other set of pairs would give: at step 1 the logged NLL is the mean
chosen-trajectory NLL of the step's 4 pairs, and the other 69 sets of 4 of the 8 pairs differ from it by 1.2e-3 at
least (median 0.13); the control at the end of the test checks both. The final LoRA weights are compared by relative
L2 difference (measured 2e-5 on lora_B, bound 1e-3): Adam divides each gradient by its own running size, which
magnifies rounding noise on parameters whose gradient is nearly zero, so an element-wise bound would be arbitrary.
"""
import json, os, signal, subprocess, sys, time
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sweet_rl.base.core import write_jsonl
from sweet_rl.methods.critic import Critic, CriticConfig, agent_nll, make_pairs, synthetic_trajectories
from sweet_rl.base.models import token_logprobs
from sweet_rl.runs.launch import check_accelerate_config, global_batch, step_examples

ROOT = Path(__file__).resolve().parents[1]
CPU_2PROC = ROOT / 'configs' / 'accelerate' / 'cpu_2proc.yaml'
N_TASKS, STEPS, SEED = 8, 3, 0  # 8 pairs, global batch 4: two steps per epoch, so the order of the pairs matters
ATOL = 1e-4  # float32 rounding between the two layouts (see the module docstring)
WEIGHTS_RTOL = 1e-3  # relative L2 difference of the trained LoRA weights
LOGGED = ('loss', 'bt', 'nll', 'margin', 'accuracy', 'grad_norm')
NO_DEEPSPEED = "deepspeed is not installed (the dev extra builds it: DS_BUILD_OPS=0 pip install -e '.[dev]')"


def _config(batch_size:int, grad_accum:int) -> CriticConfig:
    return CriticConfig(dtype='float32', batch_size=batch_size, grad_accum=grad_accum, lr=1e-3, warmup_ratio=0.0, lora_r=4,
                        lora_alpha=8, seed=SEED, save_steps=1000, logging_steps=1, template='{problem_description}\n{reference}')


def test_layouts_deal_out_the_same_pairs():
    assert check_accelerate_config(CPU_2PROC)['processes'] == 2
    assert global_batch(2, 1, 2) == global_batch(1, 2, 2) == 4
    one, two = step_examples(N_TASKS, 2, 1, 2, SEED, epochs=2), step_examples(N_TASKS, 1, 2, 2, SEED, epochs=2)
    assert one == two and len(one) == 4 and all(len(s) == 4 for s in one)


def _launch(cmd:list, tmp:Path, name:str, config:CriticConfig) -> subprocess.Popen:
    config.save(tmp / f'{name}.json')
    args = ['critic', '--config', str(tmp / f'{name}.json'), '--data', str(tmp / 'trajectories.jsonl'), '--out', str(tmp / name),
            '--max-steps', str(STEPS), '--no-progress']
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    with open(tmp / f'{name}.out', 'w') as log:  # the child keeps its own copy of the file
        return subprocess.Popen(cmd + args, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _initial_chosen_nll(trajectories) -> torch.Tensor:
    "NLL per agent token of each pair's chosen trajectory under the untrained critic (adapter still zero), `[pairs]`."
    critic = Critic.build(_config(2, 2), 'cpu')
    enc = critic.encode([p['chosen'] for p in make_pairs(trajectories)])
    with torch.no_grad(): lp = token_logprobs(critic.model, enc.input_ids, enc.attention_mask)
    return torch.stack([agent_nll(lp[i:i + 1], enc.turn_index[i:i + 1]) for i in range(len(lp))])


def _steps(out:Path) -> list[dict]:
    return [r for r in map(json.loads, (out / 'train_log.jsonl').read_text().splitlines()) if 'loss' in r]


def test_two_processes_follow_one_process(tmp_path):
    trajectories = synthetic_trajectories(N_TASKS, seed=SEED)
    assert len(make_pairs(trajectories)) == N_TASKS
    write_jsonl(tmp_path / 'trajectories.jsonl', trajectories)
    start = time.time()
    # `python -m accelerate.commands.launch` is `accelerate launch`, found without relying on PATH
    runs = {'one': _launch([sys.executable, '-m', 'sweet_rl.runs.launch'], tmp_path, 'one', _config(2, 2)),
            'two': _launch([sys.executable, '-m', 'accelerate.commands.launch', '--config_file', str(CPU_2PROC), '-m', 'sweet_rl.runs.launch'],
                           tmp_path, 'two', _config(1, 2))}
    try:  # both at once: 3 single-threaded processes on the CPU
        for proc in runs.values(): proc.wait(timeout=900)
    finally:
        for proc in runs.values():
            if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the processes it started
    for name, proc in runs.items(): assert proc.returncode == 0, (tmp_path / f'{name}.out').read_text()[-4000:]
    print(f"both runs: {time.time() - start:.0f} s")
    printed = {n: (tmp_path / f'{n}.out').read_text() for n in runs}
    assert printed['one'].count('global batch 4 = micro-batch 2 × 1 process × accumulation 2') == 1
    assert printed['two'].count('global batch 4 = micro-batch 1 × 2 processes × accumulation 2') == 1  # process 0 only

    one, two = _steps(tmp_path / 'one'), _steps(tmp_path / 'two')
    assert [r['step'] for r in one] == [r['step'] for r in two] == list(range(1, STEPS + 1))
    for a, b in zip(one, two):
        for k in LOGGED: assert abs(a[k] - b[k]) <= ATOL, (a['step'], k, a[k], b[k])
        assert a['learning_rate'] == pytest.approx(b['learning_rate'])
    assert one[-1]['loss'] < one[0]['loss'] - 100 * ATOL  # the trajectory moves by far more than the tolerance

    # control: step 1 trained on the pairs `step_examples` names, and other pairs would have missed the tolerance.
    # At step 1 the LoRA adapter is still zero, so the logged NLL is the base model's mean NLL of the 4 chosen trajectories.
    nll = _initial_chosen_nll(trajectories)
    first = step_examples(N_TASKS, 2, 1, 2, SEED)[0]
    assert abs(nll[first].mean() - one[0]['nll']) <= ATOL, (nll[first].mean(), one[0]['nll'])
    others = [abs(float(nll[list(s)].mean()) - one[0]['nll']) for s in combinations(range(N_TASKS), 4) if list(s) != first]
    assert min(others) > ATOL, sorted(others)[:5]  # every other set of 4 pairs misses it (measured: by 1.2e-3 at least)

    w1, w2 = (load_file(str(tmp_path / n / 'critic' / 'weights.safetensors')) for n in ('one', 'two'))
    assert w1.keys() == w2.keys() and len(w1) > 0
    for part in ('lora_A', 'lora_B'):  # the final weights agree too
        a, b = (torch.cat([w[k].flatten() for k in sorted(w1) if part in k]) for w in (w1, w2))
        rel = float((a - b).norm() / a.norm())
        assert rel <= WEIGHTS_RTOL, (part, rel)
    for n in runs:
        m = json.loads((tmp_path / n / 'metrics.json').read_text())
        assert (m['steps'], m['global_batch']) == (STEPS, 4)
    assert json.loads((tmp_path / 'two' / 'metrics.json').read_text())['processes'] == 2
    assert not list((tmp_path / 'two').rglob('*.tmp'))  # no half-written file left by a second writer


def test_zero3_config_launches_the_critic_trainer_on_cpu(tmp_path, tiny_lm):
    """`accelerate launch` with the shipped ZeRO-3 config gets past its DeepSpeed import and trains a step.
    Needs deepspeed (the dev and gpu extras): one process on the CPU, bf16 off, the 2-layer `tiny_lm`; ~15 s."""
    pytest.importorskip('deepspeed', reason=NO_DEEPSPEED)
    write_jsonl(tmp_path / 'trajectories.jsonl', synthetic_trajectories(4, seed=SEED))
    zero3 = ROOT / 'configs' / 'accelerate' / 'deepspeed_zero3.yaml'
    proc = _launch([sys.executable, '-m', 'accelerate.commands.launch', '--config_file', str(zero3), '--num_processes', '1',
                    '--mixed_precision', 'no', '-m', 'sweet_rl.runs.launch'], tmp_path, 'zero3', replace(_config(1, 1), model=tiny_lm))
    try: rc = proc.wait(timeout=600)
    finally:
        if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL)
    log = (tmp_path / 'zero3.out').read_text()
    assert 'DeepSpeed is not installed' not in log and rc == 0, log[-3000:]
    assert _steps(tmp_path / 'zero3') and (tmp_path / 'zero3' / 'critic').is_dir()


ZERO3_LOGPROBS = '''
import copy, json, os, socket, torch
from torch.utils._python_dispatch import TorchDispatchMode
with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port), RANK='0', LOCAL_RANK='0', WORLD_SIZE='1')
import deepspeed
from deepspeed.utils import safe_get_full_grad
from transformers import LlamaConfig, LlamaForCausalLM
from sweet_rl.base.models import token_logprobs
from sweet_rl.base.train import policy_logprobs

V, CHUNK = 97, 4
aten = torch.ops.aten
PROJECTIONS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten._log_softmax.default,
               aten._log_softmax_backward_data.default}
class Rows(TorchDispatchMode):  # the most positions a projection to the vocabulary (or its log-softmax) made at once
    most = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in PROJECTIONS and out.shape[-1] == V: self.most = max(self.most, out.numel() // V)
        return out

deepspeed.init_distributed(dist_backend='gloo')
rows = []
for tied, frozen_head in ((False, False), (True, False), (False, True)):
    torch.manual_seed(0)
    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=tied))
    if frozen_head: tiny.lm_head.weight.requires_grad_(False)  # as with LoRA: the head is frozen
    ids = torch.randint(0, V, (2, 12)); mask = torch.ones_like(ids); mask[1, 9:] = 0
    plain = copy.deepcopy(tiny)
    want_lp = token_logprobs(plain, ids, mask, CHUNK, unpad=False); (want_lp * mask).sum().backward()
    want = {n: p.grad for n, p in plain.named_parameters() if p.requires_grad}
    cfg = {'train_micro_batch_size_per_gpu': 1, 'zero_optimization': {'stage': 3, 'stage3_param_persistence_threshold': 0},
           'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-3, 'torch_adam': True}}}
    model = copy.deepcopy(tiny)
    engine, *_ = deepspeed.initialize(model=model, config=cfg, model_parameters=[p for p in model.parameters() if p.requires_grad])
    for step in range(2):  # a second step: the first left the partitions in a state ZeRO-3 can go on from
        with Rows() as seen:
            lp = policy_logprobs(engine, ids, mask, chunk_size=CHUNK)
            engine.backward((lp * mask).sum())
        if step == 0:
            d_lp = float((lp - want_lp)[mask.bool()].abs().max())
            d_grad = max(float((safe_get_full_grad(p) - want[n]).abs().max())
                         for n, p in engine.module.named_parameters() if p.requires_grad)
            rows.append(dict(tied=tied, frozen_head=frozen_head, d_logprob=d_lp, d_grad=d_grad, most_rows=seen.most))
        engine.step()
print(json.dumps(rows))
'''


def test_policy_logprobs_under_zero3_match_the_plain_model(tmp_path):
    """Inside a ZeRO-3 engine (one CPU process, gloo) `policy_logprobs` gives the plain model's log-probs and gradients,
    its vocabulary projection in chunks, with an untied, a tied and a frozen output head (LoRA freezes it).
    Needs deepspeed (the dev and gpu extras); ~10 s."""
    pytest.importorskip('deepspeed', reason=NO_DEEPSPEED)
    (tmp_path / 'zero3_logprobs.py').write_text(ZERO3_LOGPROBS)
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    out = subprocess.run([sys.executable, str(tmp_path / 'zero3_logprobs.py')], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(rows) == 3, rows
    for r in rows:
        assert r['d_logprob'] <= 1e-5 and r['d_grad'] <= 1e-5, r
        assert r['most_rows'] <= 2 * 4, r  # 2 rows x 4 positions at a time; the full path makes 2 x 12


UNEQUAL_LENGTHS = '''
import copy, json, os, sys, torch
import torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM
from sweet_rl.base.models import token_logprobs
from sweet_rl.base.train import policy_logprobs

wrapper, rank, world = sys.argv[1], int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
V, CHUNK, LENGTHS = 97, 4, (14, 6)  # 13 and 5 predicted positions: 4 chunks of 4 positions in process 0, 2 in process 1
torch.manual_seed(0)
tiny = LlamaForCausalLM(LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2))
batches = []
for T in LENGTHS:
    ids = torch.randint(0, V, (2, T)); mask = torch.ones_like(ids); mask[1, T - 2:] = 0
    batches.append((ids, mask))
plain = copy.deepcopy(tiny)  # what the processes compute together: each its own batch, the mean of their gradients
want_lp = [token_logprobs(plain, ids, mask, CHUNK, unpad=False) for ids, mask in batches]
(sum((lp * m).sum() for lp, (_, m) in zip(want_lp, batches)) / world).backward()
want = {n: p.grad for n, p in plain.named_parameters()}
ids, mask = batches[rank]
model = copy.deepcopy(tiny)
if wrapper == 'zero3':
    import deepspeed
    from deepspeed.utils import safe_get_full_grad
    deepspeed.init_distributed(dist_backend='gloo')
    cfg = {'train_micro_batch_size_per_gpu': 1, 'zero_optimization': {'stage': 3, 'stage3_param_persistence_threshold': 0},
           'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-3, 'torch_adam': True}}}
    model, *_ = deepspeed.initialize(model=model, config=cfg, model_parameters=list(model.parameters()))
    lp = policy_logprobs(model, ids, mask, chunk_size=CHUNK); model.backward((lp * mask).sum())
    grads = {n: safe_get_full_grad(p) for n, p in model.module.named_parameters()}
else:
    from torch.distributed.fsdp import fully_shard
    dist.init_process_group('gloo')
    for layer in model.model.layers: fully_shard(layer)
    fully_shard(model)
    lp = policy_logprobs(model, ids, mask, chunk_size=CHUNK); (lp * mask).sum().backward()
    grads = {n: p.grad.full_tensor() for n, p in model.named_parameters()}
with torch.no_grad(): ref = policy_logprobs(model, ids, mask, chunk_size=CHUNK)  # as the frozen reference runs: no backward
real = mask.bool()
print(json.dumps(dict(rank=rank, positions=int(ids.shape[1]) - 1, d_logprob=float((lp - want_lp[rank])[real].abs().max()),
                      d_reference=float((ref - want_lp[rank])[real].abs().max()),
                      d_grad=max(float((grads[n] - want[n]).abs().max()) for n in want), grads=len(grads))))
dist.destroy_process_group()
'''


def _two_processes(script:Path, arg:str, timeout:float) -> tuple[list, list[str]]:
    "Run `script arg` as processes 0 and 1 of a gloo group on this machine: their exit codes (None: still running at `timeout`) and output."
    import socket
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    procs, logs = [], [script.with_name(f'rank{r}.out') for r in range(2)]
    for rank in range(2):
        env = {**os.environ, 'OMP_NUM_THREADS': '1', 'MASTER_ADDR': '127.0.0.1', 'MASTER_PORT': str(port), 'RANK': str(rank),
               'LOCAL_RANK': str(rank), 'WORLD_SIZE': '2'}
        with open(logs[rank], 'w') as log:
            procs.append(subprocess.Popen([sys.executable, str(script), arg], cwd=script.parent, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))
    deadline = time.time() + timeout
    try:
        for p in procs:
            try: p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired: pass
    finally:
        codes = [p.poll() for p in procs]
        for p in procs:
            if p.poll() is None: os.killpg(p.pid, signal.SIGKILL)
    return codes, [l.read_text() for l in logs]


@pytest.mark.parametrize('wrapper', ['fsdp', 'zero3'])
def test_processes_with_unequal_lengths_agree_with_the_plain_model(tmp_path, wrapper):
    """Two processes (gloo) whose batches are padded to different lengths, so their vocabulary projections run in different
    numbers of chunks (4 and 2), under FSDP2 or ZeRO-3: neither hangs, and each gets the plain model's log-probs, and both
    the mean of the plain gradients. ZeRO-3 gathers the head once per pass (it gathered it in every chunk, so the processes
    made different numbers of all-gathers, and the gloo group failed). Needs deepspeed for ZeRO-3; ~15 s each."""
    if wrapper == 'zero3': pytest.importorskip('deepspeed', reason=NO_DEEPSPEED)
    (tmp_path / 'unequal.py').write_text(UNEQUAL_LENGTHS)
    codes, logs = _two_processes(tmp_path / 'unequal.py', wrapper, timeout=300)
    assert codes == [0, 0], f"exit codes {codes} (None: hung, killed after 300 s)\n" + '\n'.join(l[-3000:] for l in logs)
    rows = [json.loads(l.strip().splitlines()[-1]) for l in logs]
    print(rows)
    assert [r['positions'] for r in rows] == [13, 5], rows
    for r in rows:
        assert r['grads'] == 21, r  # every weight of the 2-layer model, the head included
        assert r['d_logprob'] <= 1e-5 and r['d_reference'] <= 1e-5 and r['d_grad'] <= 1e-5, r
