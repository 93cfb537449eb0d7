"""A small 1-D convolutional net for sequences: `model.factory: "models.conv1d:build"`, `model.path: examples`.

build(input_shape, channels=32, kernel=5, outputs=1) takes samples of shape (channels_in, length), or
(length,) for a single channel.
"""

from __future__ import annotations

from torch import nn


class Conv1dNet(nn.Module):
    def __init__(self, channels_in: int, channels: int, kernel: int, outputs: int, unsqueeze: bool):
        super().__init__()
        self.unsqueeze = unsqueeze
        self.features = nn.Sequential(
            nn.Conv1d(channels_in, channels, kernel, padding=kernel // 2),
            nn.ReLU(),
            nn.Conv1d(channels, channels, kernel, padding=kernel // 2),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.head = nn.Linear(channels, outputs)

    def forward(self, x):
        if self.unsqueeze:
            x = x.unsqueeze(1)
        return self.head(self.features(x).flatten(1))


def build(input_shape, channels: int = 32, kernel: int = 5, outputs: int = 1) -> nn.Module:
    if len(input_shape) not in (1, 2):
        raise ValueError(
            f"the 1-D conv net takes samples of shape (length,) or (channels, length), not {tuple(input_shape)}"
        )
    channels_in = 1 if len(input_shape) == 1 else input_shape[0]
    return Conv1dNet(channels_in, channels, kernel, outputs, unsqueeze=len(input_shape) == 1)
