"""The gradient-variance estimator against closed forms."""

from __future__ import annotations

import pytest
import torch

from accel_choice.measure import gradvar
from accel_choice.measure.model import build_model
from builders_northstar import northstar_environment

RECORD = {"parameter_point": "test", "environment": northstar_environment()}


def test_per_sample_gradients_match_autograd_one_sample_at_a_time():
    torch.manual_seed(0)
    x, y = torch.randn(6, 3), (torch.rand(6) > 0.5).float()
    model = build_model(3, 4, 1)
    gradients = gradvar.per_sample_gradients(model, x, y)
    assert gradients.shape == (6, sum(p.numel() for p in model.parameters()))
    for i in range(6):
        model.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(model(x[i : i + 1]), y[i : i + 1].reshape(1, 1)).backward()
        expected = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        assert torch.allclose(gradients[i], expected, atol=1e-6)


def test_predicted_variance_finite_population_factor():
    assert gradvar.predicted_variance(2.0, 4, 10) == pytest.approx(2.0 / 4 * 6 / 9)
    assert gradvar.predicted_variance(2.0, 4, 10, without_replacement=False) == pytest.approx(0.5)
    assert gradvar.predicted_variance(2.0, 10, 10) == 0.0  # the whole population: no sampling noise


def test_estimator_matches_the_closed_form_on_known_gradients():
    # Per-sample "gradients" with a known population variance: the exact expectation of
    # |g_B − G|² for sampling without replacement is σ²/B · (N−B)/(N−1).
    generator = torch.Generator().manual_seed(1)
    gradients = torch.randn(40, 3, generator=generator, dtype=torch.float64) * torch.tensor(
        [1.0, 2.0, 0.5], dtype=torch.float64
    )
    result = gradvar.variance_table(gradients, [1, 5, 20, 40], draws=20000, seed=2, **RECORD)
    sigma2 = float(((gradients - gradients.mean(0)) ** 2).sum(1).mean())
    assert result.sigma2 == pytest.approx(sigma2)
    rows = {r.batch_size: r for r in result.table}
    for b in (1, 5, 20):
        assert rows[b].predicted == pytest.approx(sigma2 / b * (40 - b) / 39)
        assert abs(rows[b].measured - rows[b].predicted) < 4 * rows[b].measured_stderr
        assert rows[b].ratio == pytest.approx(1.0, abs=0.05)
    assert rows[40].measured == pytest.approx(0.0, abs=1e-20)
    # B = N: the prediction is 0, so the ratio is undefined: null in the record (JSON holds no NaN).
    assert rows[40].predicted == 0 and rows[40].ratio is None and rows[40].ratio_2se is None


def test_variance_shrinks_as_one_over_b_on_the_model():
    torch.manual_seed(3)
    x, y = torch.randn(512, 4), (torch.rand(512) > 0.5).float()
    gradients = gradvar.per_sample_gradients(build_model(4, 6, 0), x, y)
    rows = gradvar.variance_table(gradients, [4, 64], draws=3000, seed=0, **RECORD).table
    assert rows[0].measured / rows[1].measured == pytest.approx(16 * (512 - 4) / (512 - 64), rel=0.15)


def test_batch_size_outside_the_rows_is_refused():
    with pytest.raises(ValueError, match="between 1 and the 10 rows"):
        gradvar.variance_table(torch.randn(10, 2), [11], draws=5, seed=0, **RECORD)


def test_one_draw_is_refused_it_has_no_standard_error():
    with pytest.raises(ValueError, match="draws must be at least 2"):
        gradvar.variance_table(torch.randn(10, 2), [2], draws=1, seed=0, **RECORD)


def test_sparse_and_dense_batch_means_agree(monkeypatch):
    generator = torch.Generator().manual_seed(4)
    centred = torch.randn(64, 5, generator=generator, dtype=torch.float64)
    index = torch.topk(torch.rand(7, 64, generator=generator), 3, dim=1, largest=False).indices
    expected = centred[index].mean(dim=1)
    monkeypatch.setattr(gradvar, "SPARSE_BELOW", 1)  # 3 rows of 64: sparse
    assert torch.allclose(gradvar._batch_means(centred, index), expected, atol=1e-12)
    monkeypatch.setattr(gradvar, "SPARSE_BELOW", 10**6)  # dense
    assert torch.allclose(gradvar._batch_means(centred, index), expected, atol=1e-12)
