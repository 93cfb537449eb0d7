"""The specification's model: d -> hidden -> 1 with ReLU, trained with Adam on BCEWithLogitsLoss."""

from __future__ import annotations

import hashlib

import torch
from torch import nn


def build_model(features: int, hidden: int, seed: int) -> nn.Sequential:
    """Seeded so every batch size and loader starts from the same initial weights."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def make_optimizer(model: nn.Module, lr: float, device: torch.device | None = None) -> torch.optim.Optimizer:
    """Adam. On CUDA the fused implementation, for every precision: the plain one makes
    GradScaler.step read the found-inf flag on the host (`.item()`, a device sync every step),
    which would time fp16 with a sync that fp32 and bf16 do not pay; the fused step takes the
    scaler's flag and scale on the device. On the CPU the textbook's plain Adam."""
    fused = device is not None and device.type == "cuda"
    return torch.optim.Adam(model.parameters(), lr=lr, fused=True if fused else None)


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
