"""The two ways of feeding batches that a timing job compares.

`dataloader` is the specification's `DataLoader(TensorDataset, shuffle=True)`: it fetches
each sample by `__getitem__` and stacks them with `default_collate`. `fastpath` draws the
same shuffled permutation and slices the tensors with it, one indexing call per batch.
Made fresh with the same seed, both yield identical batches in identical order in their
first pass - the timed epoch always uses fresh loaders - so any time difference between
them is loader overhead, not different work. (Later passes differ: torch's RandomSampler
draws a second, unused permutation at the end of each pass. Only the warm-up makes more
than one pass, and it trains a throw-away copy.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

LOADERS = ("dataloader", "fastpath")
Batch = tuple[torch.Tensor, torch.Tensor]


def _gathered(t: torch.Tensor, index: torch.Tensor, pin: bool) -> torch.Tensor:
    """t[index]; with `pin`, gathered straight into pinned memory (a gather out of a pinned tensor
    is otherwise pageable)."""
    if not pin:
        return t[index]
    out = torch.empty((len(index), *t.shape[1:]), dtype=t.dtype, pin_memory=True)
    return torch.index_select(t, 0, index, out=out)


def _sliced(
    x: torch.Tensor, y: torch.Tensor, batch_size: int, order: torch.Tensor | None, pin: bool = False
) -> Iterator[Batch]:
    rows = x.shape[0]
    for start in range(0, rows, batch_size):
        if order is None:  # a slice of a pinned tensor is pinned
            yield x[start : start + batch_size], y[start : start + batch_size]
        else:
            index = order[start : start + batch_size]
            yield _gathered(x, index, pin), _gathered(y, index, pin)


class FastPathLoader:
    """Shuffled-index slicing; a fresh permutation from `generator` at every epoch."""

    def __init__(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        batch_size: int,
        shuffle: bool,
        generator: torch.Generator,
        pin: bool = False,
    ):
        self.x, self.y, self.batch_size, self.shuffle, self.generator = x, y, batch_size, shuffle, generator
        self.pin = pin  # gather shuffled batches into pinned host memory

    def __iter__(self) -> Iterator[Batch]:
        order = torch.randperm(self.x.shape[0], generator=self.generator).to(self.x.device) if self.shuffle else None
        return _sliced(self.x, self.y, self.batch_size, order, self.pin)

    def __len__(self) -> int:
        return -(-self.x.shape[0] // self.batch_size)


def make_loader(
    kind: str, x: torch.Tensor, y: torch.Tensor, batch_size: int, shuffle: bool, seed: int, pin: bool = False
) -> Iterable[Batch]:
    """Make a variant's loader.

    `pin`: hand out batches in pinned host memory (DataLoader's pin_memory; the fast path gathers
    into pinned buffers), for non-blocking copies to a GPU."""
    generator = torch.Generator().manual_seed(seed)
    if kind == "dataloader":
        dataset = TensorDataset(x, y)
        # What shuffle=True builds, but with the generator on the sampler alone: DataLoader
        # would otherwise draw its worker base seed from it first and shift the permutation. The
        # base seed comes from a generator of its own: drawn from torch's global one, it would move
        # the global random state (a model's dropout masks) in this loader's epochs only.
        sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        own = torch.Generator().manual_seed(seed)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, pin_memory=pin, generator=own)
    if kind == "fastpath":
        return FastPathLoader(x, y, batch_size, shuffle, generator, pin)
    raise ValueError(f"unknown loader {kind!r}; allowed: {', '.join(LOADERS)}")
