"""Example models for accel-choice's `model.factory` (docs/own-model.md)."""
