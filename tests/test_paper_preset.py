"The paper preset: its dry run checks parameters, paths, world size, global batch and memory without loading weights."
import json, subprocess, sys
from pathlib import Path

import pytest
import torch

from sweet_rl.runs.launch import ACCELERATE_CONFIGS, launch_plan
import sweet_rl.runs.pipeline as pipeline
from sweet_rl.runs.pipeline import reproduce

ROOT = Path(__file__).resolve().parents[1]


def test_paper_preset_dry_run_plans_every_training(paper_cluster, monkeypatch):
    monkeypatch.setattr(pipeline, 'cluster_problems', lambda *a, **k: [])  # the plans only (tests/test_paper_dry_run.py: the machine)
    out = reproduce('paper', list(pipeline.STUDIES), dry_run=True)  # table4 named: opt-in at the paper scale
    # only Table 4's runs (launched with the offload config; its 70B actors), each told what it needs that the training
    # code does not do, and its DPO pairs of the actor's 16,384 tokens over 80 GB per GPU even with Adam offloaded
    assert out['problems'] and all(p.startswith('table4/') for p in out['problems']), out['problems']
    kinds = {('CPU Adam' in p, 'sharded loading' in p, 'GB per GPU needed' in p) for p in out['problems']}
    assert kinds == {(True, False, False), (False, True, False), (False, False, True)}, out['problems']
    assert sum('GB per GPU needed' in p for p in out['problems']) == 2  # Table 4's Multi-Turn DPO and SWEET-RL actors
    plans = out['training']
    assert plans and all(p['processes'] == 8 and p['sharded'] for p in plans)
    by_method = {(p['what'], p['method']): p['global_batch'] for p in plans}
    assert by_method[('actor', 'rft')] == 32 and by_method[('actor', 'sweet')] == 8 and by_method[('critic', 'critic')] == 8
    vision = [p for p in plans if p['what'] == 'critic' and p['vision']]
    assert vision and all('Qwen2-VL-7B' in p['model'] for p in vision)  # the frontend critic of Table 2
    # what the code allocates per GPU (8 GPUs, ZeRO-3, the release's 8,192 tokens for the critic and 16,384 for the actor):
    # the critic's and DPO's frozen copy
    # sharded like the trained model, log-probs projected 256 positions at a time, RFT without a reference
    by_run = {(p['what'], p['method'], p['model'].rsplit('/', 1)[-1]): p for p in plans}
    critic, rft = by_run[('critic', 'critic', 'Llama-3.1-8B-Instruct')], by_run[('actor', 'rft', 'Llama-3.1-8B-Instruct')]
    assert (critic['layout']['seq_len'], critic['layout']['reference'], critic['layout']['projection']) == (8192, 'sharded', 'chunked')
    assert (rft['layout']['reference'], rft['layout']['sequences'], rft['layout']['seq_len']) == ('none', 4, 16384)
    assert critic['memory_per_gpu_gb']['reference'] == round(critic['parameters'] * 2 / 8 / 2 ** 30, 2)  # an eighth of 15 GiB
    # ~24 GiB for a critic pair (~60 with a whole copy and full logits), ~41 for RFT's 4 conversations of 16,384 (~148)
    assert 20 < critic['memory_per_gpu_gb']['total'] < 28 and 36 < rft['memory_per_gpu_gb']['total'] < 46
    assert all(p['memory_per_gpu_gb']['total'] < 80 for p in plans if 'Llama-3.1-70B' not in p['model'])


def test_a_70b_actor_is_told_what_it_needs(paper_cluster):
    "Its optimizer state fits 8 GPUs only offloaded, and the plan says what that and the loading need."
    tmp, env = paper_cluster
    cfg = tmp / 'actor70b.json'
    cfg.write_text(json.dumps({'model': '${SWEET_RL_MODELS}/Llama-3.1-70B-Instruct', 'method': 'sweet', 'lora': False,
                               'batch_size': 1, 'grad_accum': 1, 'gradient_checkpointing': True,
                               'max_length': 8192}))  # at the actor's 16,384 its pair needs ~99 GB even offloaded
    offloaded = launch_plan('actor', cfg, ACCELERATE_CONFIGS / 'deepspeed_zero3_offload.yaml')
    assert offloaded['memory_per_gpu_gb']['optimizer'] == 0 and offloaded['memory_per_gpu_gb']['total'] < 80
    # before: no problem named, yet DeepSpeed refuses the Trainer's AdamW under offload, and every rank loads 2 x 131 GiB
    needs, loading = offloaded['problems']
    assert 'CPU Adam' in needs and 'zero_force_ds_cpu_optimizer' in needs
    assert f"{offloaded['memory_per_gpu_gb']['loading']} GB per GPU" in loading and 'sharded loading' in loading
    on_gpus = launch_plan('actor', cfg, ACCELERATE_CONFIGS / 'deepspeed_zero3.yaml')
    assert len(on_gpus['problems']) == 2 and 'GB per GPU needed' in on_gpus['problems'][0] and 'sharded loading' in on_gpus['problems'][1]


def test_a_launched_offload_stage_fails_before_loading_weights(tmp_path, tiny_lm, monkeypatch):
    "What `accelerate launch --config_file configs/accelerate/deepspeed_zero3_offload.yaml` starts refuses at once, naming the need."
    import sweet_rl.base.models, sweet_rl.base.train
    from sweet_rl.base.core import write_jsonl
    from sweet_rl.runs.launch import launcher_env, main
    for k, v in launcher_env(ACCELERATE_CONFIGS / 'deepspeed_zero3_offload.yaml').items(): monkeypatch.setenv(k, v)
    def no_load(*a, **k): raise AssertionError('weights loaded before the requirement was checked')
    monkeypatch.setattr(sweet_rl.base.models, 'load_model', no_load); monkeypatch.setattr(sweet_rl.base.train, 'load_model', no_load)
    (tmp_path / 'actor.json').write_text(json.dumps({'model': tiny_lm, 'method': 'rft', 'lora': False}))
    write_jsonl(tmp_path / 'rows.jsonl', [{'conversation': [{'role': 'user', 'content': 'Hi.'}, {'role': 'assistant', 'content': 'Hello.'}]}])
    with pytest.raises(RuntimeError, match='CPU Adam'):
        main(['actor', '--config', str(tmp_path / 'actor.json'), '--data', str(tmp_path / 'rows.jsonl'), '--out', str(tmp_path / 'run'), '--cpu'])


def test_missing_model_folder_is_named(paper_cluster, monkeypatch):
    tmp, env = paper_cluster
    (tmp / 'models' / 'Llama-3.1-8B-Instruct' / 'config.json').unlink()
    (tmp / 'models' / 'Llama-3.1-8B-Instruct').rmdir()
    monkeypatch.setattr(pipeline, 'cluster_problems', lambda *a, **k: [])
    problems = reproduce('paper', ['table3'], dry_run=True)['problems']
    assert any('missing paths' in p and 'Llama-3.1-8B-Instruct' in p for p in problems), problems


def test_shipped_paper_configs_plan_cleanly(paper_cluster):
    for f in sorted((ROOT / 'configs' / 'paper').glob('*.json')):
        what = 'critic' if f.name.startswith('critic') else 'actor'
        p = launch_plan(what, f, ACCELERATE_CONFIGS / 'deepspeed_zero3.yaml')
        assert p['problems'] == [], (f.name, p['problems'])
        assert p['layout']['seq_len'] == (16384 if what == 'actor' else 8192), f.name  # the release's lengths
    # one process on one GPU cannot fully fine-tune 8B: said plainly, through the command line's exit status
    proc = subprocess.run([sys.executable, '-m', 'sweet_rl.runs.launch', 'plan', 'critic', '--config', str(ROOT / 'configs/paper/critic_backend.json')],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and 'global batch 1' in proc.stdout and 'GB per GPU needed' in proc.stdout


def test_activation_checkpointing_keeps_the_losses(tmp_path, tiny_lm):
    "Recomputing activations in the backward pass must not change training: same losses with and without."
    from sweet_rl.methods.critic import CriticConfig, synthetic_trajectories, train_critic
    losses = []
    for on in (False, True):
        cfg = CriticConfig(model=tiny_lm, dtype='float32', lr=1e-3, batch_size=2, grad_accum=1, epochs=1, gradient_checkpointing=on)
        critic = train_critic(cfg, synthetic_trajectories(2), tmp_path / str(on), max_steps=2, progress=False)
        assert any(getattr(m, 'gradient_checkpointing', False) for m in critic.model.modules()) == on  # really recomputed
        losses.append([r['loss'] for r in map(json.loads, (tmp_path / str(on) / 'train_log.jsonl').read_text().splitlines()) if 'loss' in r])
    torch.testing.assert_close(torch.tensor(losses[1]), torch.tensor(losses[0]), atol=1e-5, rtol=1e-5)


def test_simulator_names_match_the_documented_servers():
    "Each simulator name a paper preset sends is one the documented `vllm serve` lines serve (`--served-model-name`)."
    import re
    readme = (ROOT / 'docs' / 'scale-out.md').read_text()
    served = set(re.findall(r'^vllm serve \S+ .*--served-model-name (\S+)', readme, flags=re.M))
    asked = set()
    for f in sorted((ROOT / 'studies').glob('*.yaml')):
        asked |= set(re.findall(r"'openai:([^@']+)@\$\{SWEET_RL_[A-Z_]*SIMULATOR_URL\}'", f.read_text()))
    assert asked >= {'Llama-3.1-70B-Instruct', 'Qwen2-VL-72B-Instruct'}, asked
    assert asked <= served, f"docs/scale-out.md: no `vllm serve ... --served-model-name NAME` line for {sorted(asked - served)}"


def test_figure3a_critics_train_as_table2s_critic(paper_cluster):
    "Figure 3a's critics at the paper scale: launched stages with Table 5's settings, not the notebook process in fp32."
    from sweet_rl.runs.launch import TABLE5_CRITIC, train_actor_configs
    from sweet_rl.runs.pipeline import Study, check_params, expand_study, plan_training
    plans = plan_training('figure3a', 'paper')
    assert sorted(p['stage'] for p in plans) == ['sweet', 'sweet_no_info', 'value'] and {p['notebook'] for p in plans} == {'best_of_n'}
    for p in plans:
        c, layout = p['config'], p['layout']
        assert p['what'] == 'critic' and p['processes'] == 8 and p['sharded'] and p['global_batch'] == 8 and p['problems'] == [], p
        assert (c['lora'], c['lr'], c['epochs'], c['dtype'], c['gradient_checkpointing'], c['max_length']) == (False, 2e-7, 4, 'auto', True, 8192)
        assert layout['checkpointing'] and layout['full_finetuning'] and layout['weight_bytes'] == 2 and c['model'].endswith('Llama-3.1-8B-Instruct')
    assert {(p['stage'], p['config']['head'], p['config']['use_hidden_info']) for p in plans} == {
        ('sweet', 'sweet', True), ('sweet_no_info', 'sweet', False), ('value', 'value', True)}
    # the same settings as Table 2's launched critic (train_actor at the paper scale), field for field
    table2 = [check_params('train_actor', p) for nb, p in expand_study(Study.load(ROOT / 'studies' / 'table2.yaml'), 'paper')
              if nb == 'train_actor' and p.get('method') == 'sweet' and p.get('task') == 'backend'][0]
    critic = train_actor_configs(table2)['critic'].to_dict()
    assert {k: critic[k] for k in TABLE5_CRITIC} == TABLE5_CRITIC
    # the small scale's critics still train in the notebook process with its own settings (shared critics keep their ids)
    assert plan_training('figure3a', 'small') == []


def test_best_of_n_runs_keep_their_folders(paper_cluster):
    "The committed Best-of-N runs (made before the notebook had `accelerate`) are still found finished under their ids."
    from sweet_rl.runs.pipeline import check_params, is_finished
    runs = sorted((ROOT / 'results' / 'runs' / 'best_of_n').glob('*/params.json'))
    assert runs
    for f in runs:
        saved = json.loads(f.read_text())
        assert 'accelerate' not in saved
        full = check_params('best_of_n', {k: v for k, v in saved.items() if k != 'out_dir'})
        from sweet_rl.base.core import run_dir_for
        assert run_dir_for('best_of_n', full).name == f.parent.name
        if (f.parent / 'metrics.json').is_file(): assert is_finished(f.parent, full)
