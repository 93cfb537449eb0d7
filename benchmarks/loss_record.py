"""What recording each step's loss costs a training step: nothing recorded, the loss kept in a list
(the code before the first GPU run), the loss copied into a slot of a buffer made before the clock
(`steps.train_epoch` now: kept tensors each took a 512-byte block of CUDA's allocator).

    .venv/bin/python benchmarks/loss_record.py --device cpu --rows 4096 --rounds 9
    python3 benchmarks/loss_record.py --device cuda --rows 65536 --rounds 6    # on a GPU machine

The acceptance's model (fp32, resident data, B = 32), each update the project's own `steps.Trainer.step`;
the loop around it is this file's (the way `steps.train_epoch` records a loss is the "slot" way), and
the three ways take turns in every round (interleaved, each round starting with the next), each a
whole epoch with the device synchronised before every clock read, after one warm-up epoch each.
It prints the medians per step and, per round, each way's difference from nothing recorded:
docs/gpu.md quotes its figures from the H200 and the CPU machine.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice.measure import acceptance, datagen, devices, placement, steps  # noqa: E402
from accel_choice.measure import model as models  # noqa: E402

WAYS = ("none", "list", "slot")
BATCH_SIZE = 32


def per_step_us(device: torch.device, rows: int, rounds: int) -> dict[str, list[float]]:
    """Microseconds per step of each way, one value per round."""
    data = datagen.make_benchmark(rows, acceptance.FEATURES, 0.2, acceptance.SEED)
    x, y = torch.from_numpy(data.features.copy()), torch.from_numpy(data.target.copy())
    xd, yd = x.to(device), y.reshape(-1, 1).to(device)
    batches = list(placement.batches("resident", "fastpath", x, y, BATCH_SIZE, True, acceptance.SEED, device, xd, yd))
    model = models.build(acceptance.SPEC, (acceptance.FEATURES,), acceptance.SEED).to(device)
    trainer = steps.Trainer(model, acceptance.SPEC, device)
    trainer.prime()

    def epoch(way: str) -> float:
        kept: list[torch.Tensor] = []
        slots = torch.full((len(batches),), float("nan"), device=device).unbind()
        devices.synchronize(device)
        t0 = time.perf_counter()
        for index, (xb, yb) in enumerate(batches):
            loss = trainer.step(xb, yb)
            if way == "list":
                kept.append(loss)
            elif way == "slot":
                slots[index].copy_(loss)
        devices.synchronize(device)
        return (time.perf_counter() - t0) / len(batches) * 1e6

    for way in WAYS:
        epoch(way)
    us: dict[str, list[float]] = {way: [] for way in WAYS}
    for r in range(rounds):
        for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
            us[way].append(epoch(way))
    return us


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    cuda = args.device == "cuda"
    device = (
        devices.require("cuda", "this benchmark", acceptance.NO_DEVICE_ADVICE) if cuda else torch.device(args.device)
    )
    us = per_step_us(device, args.rows, args.rounds)
    steps_ = -(-args.rows // BATCH_SIZE)
    print(f"{device}, {steps_} steps of B={BATCH_SIZE}, {args.rounds} interleaved rounds; us per step:")
    for way in WAYS:
        print(f"  {way:5} median {statistics.median(us[way]):8.2f} ({min(us[way]):.2f}-{max(us[way]):.2f})")
    for way in WAYS[1:]:
        diffs = [a - b for a, b in zip(us[way], us["none"], strict=True)]
        print(
            f"  {way} - none, per round: median {statistics.median(diffs):+.2f} us "
            f"({min(diffs):+.2f} to {max(diffs):+.2f})"
        )
    return us


if __name__ == "__main__":
    try:
        main()
    except devices.DeviceUnavailable as error:  # one line, as the acceptance says it
        sys.exit(f"error: {error}")
