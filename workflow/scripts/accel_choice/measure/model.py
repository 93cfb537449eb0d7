"""The model a timing job trains, its loss and its optimizer.

The default is the specification's d -> hidden -> 1 MLP with ReLU, trained with Adam on
BCEWithLogitsLoss. `model.factory` replaces it with the user's own module: importing the factory
runs the user's code, as a Snakefile does (docs/own-model.md); nothing here loads code or pickles
from a data file or checkpoint.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from accel_choice.measure.conditions import guarded
from accel_choice.records import UserInputError
from accel_choice.io.targets import DataError, check_target_values
from accel_choice.records.model import ModelSpec, split_factory


class ModelError(UserInputError):
    """The configured model cannot be built or trained as configured; the message names the key."""


def build_model(features: int, hidden: int, seed: int) -> nn.Sequential:
    """Seeded so every batch size and loader starts from the same initial weights."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def load_factory(spec: ModelSpec) -> Callable[..., nn.Module]:
    """Import the user's factory function from `spec.path` (this runs the module's code)."""
    assert spec.factory is not None
    module_name, function = split_factory(spec.factory)
    root = str(Path(spec.path).resolve())
    if not Path(root).is_dir():
        raise ModelError(f"config key model.path: {spec.path} is not a folder (model.factory is imported from it)")
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the user's module: any exception it raises while importing
        raise ModelError(
            f"config key model.factory: module {module_name!r} does not import from model.path {spec.path} "
            f"({type(error).__name__}: {error})"
        ) from error
    where = Path(getattr(module, "__file__", None) or "").resolve()
    if not where.is_relative_to(root):
        raise ModelError(
            f"config key model.factory: module {module_name!r} was imported from {where.parent}, not from "
            f"model.path {spec.path}: another module of that name comes first; rename your package"
        )
    made = getattr(module, function, None)
    if not callable(made):
        found = "no such name" if made is None else f"a {type(made).__name__}, not a function"
        raise ModelError(f"config key model.factory: {module_name} has {found} {function!r}")
    return made


def build(spec: ModelSpec, input_shape: Sequence[int], seed: int) -> nn.Module:
    """Build the configured model, seeded: the textbook MLP for (features,) inputs, or the factory's."""
    if spec.factory is None:
        if len(input_shape) != 1:
            raise ModelError(
                f"config key model.factory: the textbook MLP takes samples of one dimension, the data have "
                f"shape {tuple(input_shape)}; set model.factory to a model for this data"
            )
        return build_model(input_shape[0], spec.hidden, seed)
    # Importing the module and calling the factory run the user's code: neither may change torch's settings.
    with guarded(spec.factory, ModelError):
        factory = load_factory(spec)
        torch.manual_seed(seed)
        try:
            made = factory(tuple(input_shape), **(spec.kwargs or {}))
        except Exception as error:  # the user's code
            raise ModelError(
                f"config key model.factory: {spec.factory}{(tuple(input_shape),)} with model.kwargs "
                f"{spec.kwargs or {}} raised {type(error).__name__}: {error}"
            ) from error
    if not isinstance(made, nn.Module):
        raise ModelError(
            f"config key model.factory: {spec.factory} returned a {type(made).__module__}.{type(made).__name__}, "
            "not a torch.nn.Module"
        )
    return made


def make_loss(spec: ModelSpec) -> nn.Module:
    return {"bce": nn.BCEWithLogitsLoss, "ce": nn.CrossEntropyLoss, "mse": nn.MSELoss}[spec.loss]()


def check_targets(spec: ModelSpec, y: torch.Tensor, where: str = "the benchmark data's target") -> None:
    """Refuse a target the loss cannot take, naming the key (io.targets.check_target_values)."""
    try:
        check_target_values(y.detach().cpu().numpy(), spec.loss, spec.classes, where)
    except DataError as error:
        raise ModelError(str(error)) from None


def targets(spec: ModelSpec, y: torch.Tensor) -> torch.Tensor:
    """Return the target as the loss takes it.

    The target as the loss takes it: class indices (int64, one per sample) for ce, else one
    float column."""
    if spec.loss == "ce":
        return y.reshape(-1).to(torch.int64)
    return y.reshape(-1, 1).to(torch.float32)


def outputs(spec: ModelSpec, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Shape the model's outputs as the loss compares them with `y` (a view: (B,) and (B, 1) alike)."""
    return logits if spec.loss == "ce" else logits.reshape(y.shape)


def correct(spec: ModelSpec, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor | None:
    """Count the right predictions.

    How many predictions are right (a device tensor): the logit's sign for bce, the argmax for
    ce; None for mse, which has no accuracy."""
    if spec.loss == "bce":
        return ((logits.reshape(y.shape) > 0).to(y.dtype) == y).sum()
    if spec.loss == "ce":
        return (logits.argmax(dim=1) == y).sum()
    return None


FUSED_DEVICES = ("cpu", "cuda")  # where torch.optim has fused Adam, AdamW and SGD (torch >= 2.4 on the CPU)


def make_optimizer(
    model: nn.Module, lr: float, device: torch.device | None = None, kind: str = "adam", *, capturable: bool = False
) -> torch.optim.Optimizer:
    """Make the optimizer: Adam, AdamW or plain SGD.

    Adam (the textbook's), AdamW or plain SGD, the fused implementation on the CPU and on CUDA
    (torch has both): the same implementation on either side of the comparison (issue 26), and on
    CUDA the plain one would make GradScaler.step read the found-inf flag on the host (`.item()`, a
    device sync every step), timing fp16 with a sync that fp32 and bf16 do not pay; the fused step
    takes the scaler's flag and scale on the device. Elsewhere (MPS) and without a device, torch's
    default (`optimizer_impl` names which ran). `capturable`: Adam and AdamW safe to capture in a CUDA
    graph (their step counts on the device; SGD keeps none and has no such switch)."""
    fused = True if device is not None and device.type in FUSED_DEVICES else None
    optimizers = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
    if kind not in optimizers:
        raise ModelError(f"config key model.optimizer: {kind!r}; allowed: {', '.join(optimizers)}")
    extra = {"capturable": True} if capturable and kind != "sgd" else {}
    return optimizers[kind](model.parameters(), lr=lr, fused=fused, **extra)


def optimizer_impl(optimizer: torch.optim.Optimizer) -> str:
    """Name the implementation that steps `optimizer`.

    Which implementation steps `optimizer`: 'Adam fused', 'Adam foreach' or 'Adam for-loop' (torch's
    default picks foreach for CUDA tensors when neither is asked for)."""
    fused, foreach = optimizer.defaults.get("fused"), optimizer.defaults.get("foreach")
    if fused:
        return f"{type(optimizer).__name__} fused"
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if foreach is None:
        foreach = bool(params) and all(p.device.type == "cuda" for p in params)
    return f"{type(optimizer).__name__} {'foreach' if foreach else 'for-loop'}"


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
