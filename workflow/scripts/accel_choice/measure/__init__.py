"""Jobs that touch the clock or torch: data generation, loaders, the model, training/load/transfer/grid timing, contention meters, devices, gradient variance, the FLOP counter, Northstar training."""
