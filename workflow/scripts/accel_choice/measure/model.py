"""The specification's model: d -> hidden -> 1 with ReLU, trained with Adam on BCEWithLogitsLoss."""

from __future__ import annotations

import hashlib

import torch
from torch import nn


def build_model(features: int, hidden: int, seed: int) -> nn.Sequential:
    """Seeded so every batch size and loader starts from the same initial weights."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr)


def state_sha256(model: nn.Module) -> str:
    """Hash of the parameters' bytes in state_dict order: equal hashes mean equal weights."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def layer_widths(model: nn.Sequential) -> tuple[int, ...]:
    linears = [m for m in model if isinstance(m, nn.Linear)]
    return (linears[0].in_features, *(m.out_features for m in linears))
