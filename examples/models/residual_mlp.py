"""A residual MLP with LayerNorm and dropout: `model.factory: "models.residual_mlp:build"`, `model.path: examples`.

build(input_shape, width=128, blocks=2, dropout=0.1, outputs=1, norm="layer") takes samples of one dimension.
`norm: batch` puts BatchNorm1d where LayerNorm is (the same parameters, plus running statistics).
"""

from __future__ import annotations

from torch import nn


NORMS = {"layer": nn.LayerNorm, "batch": nn.BatchNorm1d}


class Block(nn.Module):
    """x + Dropout(Linear(GELU(Linear(Norm(x))))): a pre-norm residual block."""

    def __init__(self, width: int, dropout: float, norm: str):
        super().__init__()
        self.norm = NORMS[norm](width)
        self.up = nn.Linear(width, 2 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(2 * width, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.drop(self.down(self.act(self.up(self.norm(x)))))


class ResidualMLP(nn.Module):
    def __init__(self, features: int, width: int, blocks: int, dropout: float, outputs: int, norm: str):
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.blocks = nn.Sequential(*(Block(width, dropout, norm) for _ in range(blocks)))
        self.norm = NORMS[norm](width)
        self.head = nn.Linear(width, outputs)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.embed(x))))


def build(
    input_shape, width: int = 128, blocks: int = 2, dropout: float = 0.1, outputs: int = 1, norm: str = "layer"
) -> nn.Module:
    if len(input_shape) != 1:
        raise ValueError(f"the residual MLP takes samples of one dimension, not {tuple(input_shape)}")
    if norm not in NORMS:
        raise ValueError(f"norm {norm!r}; allowed: {', '.join(NORMS)}")
    return ResidualMLP(input_shape[0], width, blocks, dropout, outputs, norm)
