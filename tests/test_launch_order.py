"""No critic, actor or policy of the calling process may hold a GPU while a launched stage trains:
`launch_training` refuses to start while one is alive, and hands PyTorch's cached GPU blocks back first."""
import subprocess, weakref

import pytest
import torch

from sweet_rl.base import train
from sweet_rl.methods.critic import Critic, CriticConfig, synthetic_trajectories
from sweet_rl.runs.launch import ACCELERATE_CONFIGS, launch_training


def test_launch_waits_for_the_notebooks_models_to_be_freed(tmp_path, tiny_lm, monkeypatch):
    monkeypatch.setattr(train, '_LIVE', weakref.WeakSet())  # only this test's models
    launched, emptied = [], []
    def fake_launch(cmd, **kwargs):  # `accelerate launch ...`: what the calling process holds at that moment
        launched.append([type(m).__name__ for m in train.live_models()]); return subprocess.CompletedProcess(cmd, 0)
    monkeypatch.setattr(subprocess, 'run', fake_launch)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'empty_cache', lambda: emptied.append(len(launched)))
    config, data = CriticConfig(model=tiny_lm, dtype='float32'), synthetic_trajectories(2)
    critic = Critic.build(config, 'cpu')
    with pytest.raises(RuntimeError, match=r"launch_training\('critic'\): this process still holds a Critic on cpu"):
        launch_training('critic', config, data, tmp_path / 'held', ACCELERATE_CONFIGS / 'cpu_2proc.yaml')
    assert launched == [] and emptied == []  # nothing started
    critic_copy = [critic]; del critic
    with pytest.raises(RuntimeError, match='still holds a Critic'):  # any reference left keeps it alive
        launch_training('critic', config, data, tmp_path / 'held', ACCELERATE_CONFIGS / 'cpu_2proc.yaml')
    critic_copy.clear()
    launch_training('critic', config, data, tmp_path / 'freed', ACCELERATE_CONFIGS / 'cpu_2proc.yaml')
    assert launched == [[]] and emptied == [0]  # the cache emptied before the launch
