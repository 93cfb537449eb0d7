"""Your own model (model.factory): loading, the parse-time checks and their messages, the counted
profile against independent counts, and training with every loss and optimizer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from accel_choice.analyze import theory
from accel_choice.analyze.figures import Figures
from accel_choice.io.imports import closure, module_file
from accel_choice.measure import model, profile, steps, training
from accel_choice.measure.model_checks import check_spec
from accel_choice.records.model import TEXTBOOK, ModelProfile, ModelSpec, spec_problem

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def user_module(tmp_path: Path, source: str, name: str = "mymodels") -> str:
    """A package `name` with module `net` holding `source`, under tmp_path; returns model.path."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "net.py").write_text(textwrap.dedent(source))
    return str(tmp_path)


def spec(factory: str | None = None, path: str = ".", **fields) -> ModelSpec:
    return ModelSpec(hidden=fields.pop("hidden", 4), lr=fields.pop("lr", 1e-2), factory=factory, path=path, **fields)


# --- the model section before anything is imported ----------------------------------------------


@pytest.mark.parametrize(
    ("factory", "loss", "classes", "words"),
    [
        ("mymodels.net", "bce", None, "config key model.factory: 'mymodels.net' is not of the form"),
        ("mymodels.net:build:x", "bce", None, "is not of the form 'package.module:function'"),
        ("my-models.net:build", "bce", None, "is not of the form"),
        ("mymodels.net:build", "ce", None, "config key model.classes: not set; model.loss ce needs"),
        ("mymodels.net:build", "mse", 3, "config key model.classes: 3 is set but model.loss is mse"),
        (None, "ce", 2, "config key model.loss: ce needs model.factory"),
    ],
)
def test_a_model_section_that_cannot_work_is_named_before_any_import(factory, loss, classes, words) -> None:
    problem = spec_problem(factory, loss, classes)
    assert problem is not None and words in problem
    with pytest.raises(ValueError, match="config key model"):
        spec(factory, loss=loss, classes=classes)


def test_a_sound_model_section_has_no_problem() -> None:
    assert spec_problem(None, "bce", None) is None
    assert spec_problem("a.b:c", "ce", 3) is None
    assert spec().label == TEXTBOOK and spec("a.b:c").label == "a.b:c"


# --- the parse-time check: every way a factory fails, named ----------------------------------------

CASES = {
    "does not import": ("import not_a_module_anywhere\n", "mymodels.net:build", "does not import from model.path"),
    "shadowed": ("", "json.decoder:JSONDecoder", "'json.decoder' was imported from"),
    "raises on import": ("raise RuntimeError('broken at import')\n", "mymodels.net:build", "broken at import"),
    "no such function": ("x = 1\n", "mymodels.net:build", "mymodels.net has no such name 'build'"),
    "not a function": ("build = 3\n", "mymodels.net:build", "a int, not a function"),
    "factory raises": (
        "def build(shape, **kw):\n    raise ValueError('bad width')\n",
        "mymodels.net:build",
        "raised ValueError: bad width",
    ),
    "not a Module": (
        "def build(shape, **kw):\n    return 'a string'\n",
        "mymodels.net:build",
        "returned a builtins.str",
    ),
    "wrong output shape": (
        "from torch import nn\ndef build(shape, **kw):\n    return nn.Linear(shape[0], 3)\n",
        "mymodels.net:build",
        "to a torch.float32 tensor of shape (2, 3); model.loss bce needs floating-point outputs of shape (2,) or (2, 1)",
    ),
    "rejects the data": (
        "from torch import nn\ndef build(shape, **kw):\n    return nn.Linear(5, 1)\n",
        "mymodels.net:build",
        "rejected a batch of shape (2, 8) (data.benchmark: 8 features per sample): RuntimeError",
    ),
    "no parameters": (
        "from torch import nn\ndef build(shape, **kw):\n    return nn.Flatten()\n",
        "mymodels.net:build",
        "to a torch.float32 tensor of shape (2, 8)",
    ),
    "frozen": (
        "from torch import nn\ndef build(shape, **kw):\n    m = nn.Linear(shape[0], 1)\n"
        "    m.requires_grad_(False)\n    return m\n",
        "mymodels.net:build",
        "has no trainable parameters",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_failing_factory_is_named_with_what_was_found(tmp_path: Path, case: str) -> None:
    source, factory, words = CASES[case]
    path = user_module(tmp_path, source, name=f"mymodels_{case.replace(' ', '_')}")
    factory = factory.replace("mymodels", f"mymodels_{case.replace(' ', '_')}")
    with pytest.raises(model.ModelError) as raised:
        check_spec(spec(factory, path), (8,), 0, "data.benchmark: 8 features per sample")
    message = str(raised.value).replace(f"mymodels_{case.replace(' ', '_')}", "mymodels")
    assert message.startswith("config key model.factory: "), message
    assert words in message, message


@pytest.mark.parametrize("where", ["on import", "in the factory"])
def test_a_factory_that_changes_torchs_threads_is_named(
    tmp_path: Path, where: str, restore_logging_and_threads
) -> None:
    """The timing runs at timing.threads: a model whose code sets its own is refused where it does so."""
    change = "torch.set_num_threads(torch.get_num_threads() + 1)"
    source = f"import torch\nfrom torch import nn\n{change if where == 'on import' else ''}\n"
    source += (
        f"def build(shape, **kw):\n    {change if where != 'on import' else ''}\n    return nn.Linear(shape[0], 1)\n"
    )
    name = f"threads_{where.replace(' ', '_')}"
    path = user_module(tmp_path, source, name=name)
    with pytest.raises(model.ModelError, match=rf"{name}.net:build set torch's threads to"):
        check_spec(spec(f"{name}.net:build", path), (8,), 0, "here")


def test_a_model_path_that_is_not_a_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(model.ModelError, match=r"config key model.path: .*missing is not a folder"):
        check_spec(spec("a.b:c", str(tmp_path / "missing")), (8,), 0, "here")


def test_ce_needs_a_logit_per_class(tmp_path: Path) -> None:
    source = "from torch import nn\ndef build(shape, k):\n    return nn.Linear(shape[0], k)\n"
    path = user_module(tmp_path, source, name="classes")
    good = spec("classes.net:build", path, loss="ce", classes=3, kwargs={"k": 3})
    assert isinstance(check_spec(good, (8,), 0, "here"), nn.Linear)
    bad = spec("classes.net:build", path, loss="ce", classes=4, kwargs={"k": 3})
    with pytest.raises(model.ModelError, match=r"with model.classes 4 needs floating-point outputs of shape \(2, 4\)"):
        check_spec(bad, (8,), 0, "here")


@pytest.mark.parametrize(
    ("loss", "classes", "values", "words"),
    [
        (
            "bce",
            None,
            [0.0, 2.0],
            "config key model.loss: bce needs targets in [0, 1]; the benchmark data's target ranges from 0 to 2",
        ),
        (
            "ce",
            2,
            [0.0, 2.0],
            "config key model.classes: ce needs class indices 0 .. 1; the benchmark data's target ranges from 0 to 2",
        ),
        ("ce", 3, [0.0, 0.5], "holds values that are not whole numbers"),
        ("mse", None, [0.0, float("nan")], "holds values that are not finite"),
    ],
)
def test_a_target_the_loss_cannot_take_is_named(loss, classes, values, words) -> None:
    factory = "a.b:c" if loss == "ce" else None
    with pytest.raises(model.ModelError) as raised:
        model.check_targets(spec(factory, loss=loss, classes=classes), torch.tensor(values))
    assert words in str(raised.value)


def test_targets_that_fit_pass() -> None:
    model.check_targets(spec(), torch.tensor([0.0, 1.0, 1.0]))
    model.check_targets(spec("a.b:c", loss="ce", classes=3), torch.tensor([0.0, 2.0, 1.0]))
    model.check_targets(spec(loss="mse"), torch.tensor([-3.5, 7.25]))


# --- the user's source is an input of the rules that build the model ----------------------------


def test_the_model_code_is_the_module_and_what_it_imports_from_model_path(tmp_path: Path) -> None:
    source = "from closure_pkg import helpers\nimport torch\ndef build(shape):\n    pass\n"
    path = user_module(tmp_path, source, name="closure_pkg")
    (tmp_path / "closure_pkg" / "helpers.py").write_text("import os\n")
    (tmp_path / "closure_pkg" / "unused.py").write_text("")
    found = module_file(path, "closure_pkg.net")
    assert found == (tmp_path / "closure_pkg" / "net.py").resolve()
    names = {p.name for p in closure(found, path, packages=None)}
    assert names == {"__init__.py", "helpers.py"}  # torch and os are not under model.path


# --- the counted profile against independent counts ---------------------------------------------


def test_the_textbook_profile_agrees_with_every_formula() -> None:
    widths = (8, 6, 1)
    counted = profile.profile(spec(hidden=6), (8,), 100, [16, 32], seed=0)
    assert counted.widths == widths and counted.model == TEXTBOOK
    assert counted.params == theory.param_count(widths) == 8 * 6 + 6 + 6 + 1
    for row in counted.table:
        assert row.step_flop == theory.forward_backward_flops_counted(row.batch_size, widths)
        # the hooks see the ReLU's output beside the layers' (the formula counts input, hidden, logits)
        assert row.activation_bytes == row.batch_size * (8 + 6 + 6 + 1) * 4
        assert row.formula_activation_bytes == theory.activation_bytes(row.batch_size, widths)
    last = counted.row(32)
    assert last.last_batch_rows == 100 % 32 == 4
    assert last.epoch_flop == 3 * last.step_flop + theory.forward_backward_flops_counted(4, widths)
    # Adam: two fp32 moments per parameter and one fp32 step count per parameter tensor (4 tensors)
    assert counted.optimizer_state_bytes == 2 * 4 * counted.params + 4 * 4
    assert Figures.of(counted).params == counted.params


class Conv(nn.Module):
    """Conv1d(2→3, k=3) on length 8 (→ 6), flattened, Linear(18→1): counted by hand below."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3)
        self.head = nn.Linear(18, 1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


def test_a_user_model_is_counted_as_by_hand(tmp_path: Path) -> None:
    path = user_module(
        tmp_path,
        "import sys\nsys.path.insert(0, %r)\nfrom test_own_model import Conv\ndef build(shape):\n    return Conv()\n"
        % str(Path(__file__).parent),
        name="byhand",
    )
    counted = profile.profile(spec("byhand.net:build", path, optimizer="sgd"), (2, 8), 40, [10, 16], seed=0)
    assert counted.widths is None and counted.formula_params is None
    assert counted.params == (2 * 3 * 3 + 3) + (18 + 1) == 40
    assert counted.input_bytes_per_sample == 2 * 8 * 4 and counted.output_shape == (1,)
    assert counted.optimizer_state_bytes == 0  # plain SGD keeps nothing
    for row in counted.table:
        b = row.batch_size
        conv = 2 * b * 3 * 6 * 2 * 3  # 2·B·C_out·L_out·C_in·k
        head = 2 * b * 18
        assert row.forward_flop == conv + head
        # backward: the conv's weight gradient only (its input is the data), the head's weight and input gradients
        assert row.backward_flop == conv + 2 * head
        # input, conv output, head output (ReLU and flatten are not modules here)
        assert row.activation_bytes == b * (16 + 18 + 1) * 4
    figures = Figures.of(counted)
    assert figures.source == "counted" and figures.model == "byhand.net:build"
    assert figures.state_bytes == 2 * 40 * 4
    assert figures.memory_bound_bytes(10, 40, resident=True) == (
        2 * 40 * 4 + 2 * 10 * 35 * 4 + 2 * 10 * (64 + 4) + 4 * 4 + 40 * (64 + 4) + 40 * 8
    )


def test_a_textbook_profile_that_disagrees_with_its_formula_is_refused() -> None:
    good = profile.profile(spec(hidden=6), (8,), 64, [16], seed=0)
    from accel_choice import records

    data = records.to_json(good)
    data["params"] += 1
    data["trainable_params"] += 1
    with pytest.raises(records.RecordError, match="counted 62 parameters, the formula 61"):
        records.from_json(ModelProfile, data, "profile.json")


# --- training any model with any loss and optimizer -----------------------------------------------


@pytest.mark.parametrize(
    ("loss", "classes", "optimizer"), [("bce", None, "adamw"), ("ce", 3, "adam"), ("mse", None, "sgd")]
)
def test_a_residual_mlp_with_dropout_trains_identically_in_every_variant(loss, classes, optimizer) -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=generator)
    y = torch.randint(0, classes or 2, (96,), generator=generator).float()
    own = spec(
        "models.residual_mlp:build",
        str(EXAMPLES),
        loss=loss,
        classes=classes,
        optimizer=optimizer,
        kwargs={"width": 16, "blocks": 1, "dropout": 0.2, "outputs": classes or 1},
    )
    variants = steps.cpu_variants(["dataloader", "fastpath"], batch_size=32)
    records, _ = training.measure_training_job(x, y, variants, repeat=0, seed=3, spec=own, warmup_steps=2, epochs=2)
    assert {r.loader for r in records} == {"dataloader", "fastpath"}
    for r in records:
        assert r.finite and r.samples == 96 and r.steps == 3
        # every epoch from the same weights with the same dropout masks: one final state in every variant
        assert r.same_final_weights_across_variants
        assert (r.eval_accuracy is None) == (loss == "mse")


def test_priming_adamw_moves_no_weight() -> None:
    net = model.build_model(4, 3, 0)
    before = model.state_sha256(net)
    trainer = steps.Trainer(net, spec(optimizer="adamw"), torch.device("cpu"))
    assert trainer.optimizer.param_groups[0]["weight_decay"] > 0  # AdamW's default decay, restored
    trainer.prime()
    assert model.state_sha256(net) == before


def test_a_user_model_is_seeded() -> None:
    own = spec("models.conv1d:build", str(EXAMPLES), kwargs={"channels": 4})
    first, second = model.build(own, (16,), 5), model.build(own, (16,), 5)
    assert model.state_sha256(first) == model.state_sha256(second)
    assert first(torch.zeros(3, 16)).shape == (3, 1)
    assert first(torch.zeros(3, 2, 16)[:, :1].squeeze(1)).shape == (3, 1)


def test_the_textbook_mlp_refuses_samples_of_more_than_one_dimension() -> None:
    with pytest.raises(model.ModelError, match=r"the data have shape \(2, 16\); set model.factory"):
        model.build(spec(), (2, 16), 0)


def test_the_formulas_hold_for_the_textbook_mlp_with_adam_on_bce_only() -> None:
    adam = Figures.of(profile.profile(spec(hidden=6), (8,), 64, [16], seed=0))
    assert adam.source == "formula" and adam.state_bytes == theory.adam_fp32_bytes((8, 6, 1))
    sgd_profile = profile.profile(spec(hidden=6, optimizer="sgd"), (8,), 64, [16], seed=0)
    sgd = Figures.of(sgd_profile)
    # plain SGD keeps no state: parameters and gradients only, counted; not Adam's 4·P·4
    assert sgd.source == "counted" and sgd.state_bytes == 2 * 4 * sgd_profile.params


def test_class_targets_are_counted_as_int64_in_the_memory_bound(tmp_path: Path) -> None:
    path = user_module(tmp_path, "from torch import nn\ndef build(shape):\n    return nn.Linear(shape[0], 3)\n", "ceb")
    counted = Figures.of(profile.profile(spec("ceb.net:build", path, loss="ce", classes=3), (4,), 10, [5], seed=0))
    assert counted.data_bytes(10) == 10 * (4 * 4 + 8)
