"""Write h200.json: the NVIDIA H200 as this project knows it before any profile was measured on one.

    .venv/bin/python config/gpu_profiles/make_h200.py [OUT]    # rewrites config/gpu_profiles/h200.json (or OUT)

Every figure says where it comes from. `recorded`: the four H200 machines of docs/gpu.md ("Run on an
H200", 2026-12-04), named A to D there; `datasheet`: NVIDIA's H200 Tensor Core GPU datasheet. Nothing
here was measured by `accel-choice profile`: the first GPU machine that runs it replaces this file
(docs/gpu.md). tests/test_gpu_profiles.py checks that this script still writes the shipped file.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze.profile_draws import figure  # noqa: E402
from accel_choice.records.device_profile import Copy, DeviceProfile, Rate, StepFigure  # noqa: E402

RUN = "docs/gpu.md, Run on an H200, 2026-12-04"
DATASHEET = (
    "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), H200 SXM column; "
    "the H200 NVL column quotes {nvl}; which form the four machines were is not recorded"
)
# The textbook MLP's fp32 step (32 -> 48 -> 1, fused Adam, data resident, fast path): the acceptance's
# epoch over its steps (65,536 rows: 2,048 steps at B = 32, 128 at B = 512) on A, B and D; C timed the
# step alone (benchmarks/loss_record.py, the loss copied into its slot, median of 6 rounds).
STEPS = {
    32: {"A": 2.099 / 2048, "B": 2.888669 / 2048, "C": 837.6e-6, "D": 2.181 / 2048},
    512: {"A": 0.125 / 128, "B": 0.170401 / 128, "D": 0.130 / 128},
}
STEP_REFERENCE = (
    f"{RUN}: fp32 resident epochs over their steps on machines A, B (the table), D (.ci/gpu); "
    "C: the step alone with its loss slot (benchmarks/loss_record.py); A ran before the loss-slot fix"
)
# The textbook step's ops, counted on the CPU (measure.op_count): what the step dispatches on any device.
OPS, KERNELS = 42, 18


def main(out: Path = HERE / "h200.json") -> None:
    steps = tuple(
        StepFigure(
            model="textbook 32-48-1",
            batch_size=batch,
            ops=OPS,
            kernels=KERNELS,
            seconds=figure("recorded", "s", {k: [v] for k, v in machines.items()}, STEP_REFERENCE),
        )
        for batch, machines in STEPS.items()
    )

    def peak(value: float, unit: str, nvl: str) -> object:
        return figure("datasheet", unit, {"NVIDIA": [value]}, DATASHEET.format(nvl=nvl))

    profile = DeviceProfile(
        name="NVIDIA H200",
        device_type="cuda",
        capability="9.0",
        device_memory_bytes=143_771 * 2**20,  # the probe on machine B: 143,771 MiB (docs/gpu.md's run)
        driver="580.159.04",
        cuda="13.0",  # torch 2.11.0+cu130 on every machine
        host_cpu=None,
        host_cores=None,
        threads=None,
        torch_version="2.11.0+cu130",
        made="2026-12-04",
        machines=4,
        runs=1,
        command=None,
        note=(
            "Recorded and datasheet figures only: the host's step cost from four machines' textbook MLP steps, "
            "the device's rates from NVIDIA's datasheet, one host-to-device copy. No ladder, kernel floor, "
            "start-up or device-to-host copy was recorded: `accel-choice profile --device cuda` measures them."
        ),
        reference_steps=steps,
        ladder=(),
        op_dispatch_s=None,
        kernel_floor_s=None,
        matmul=(
            Rate(size=None, precision="fp32", rate=peak(67e12, "FLOP/s", "60 TFLOP/s")),
            Rate(size=None, precision="tf32", rate=peak(494.5e12, "FLOP/s", "417.5 TFLOP/s dense")),
            Rate(size=None, precision="bf16", rate=peak(989.5e12, "FLOP/s", "835.5 TFLOP/s dense")),
        ),
        memory_bandwidth=(Rate(size=None, precision=None, rate=peak(4.8e12, "B/s", "4.8 TB/s as well")),),
        copies=(
            Copy(
                direction="host_to_device",
                memory="pinned",
                bytes=65_536 * 32 * 4,
                rate=figure(
                    "recorded",
                    "B/s",
                    {"B": [47.01e9]},
                    f"{RUN}: the fastest of the acceptance's 8 copies on machine B (its 8 MiB pinned matrix: "
                    "the record gives only the range 0.09-47.01 GB/s, and no smaller copy reaches such a rate)",
                ),
            ),
        ),
        context_startup_s=None,
        first_step_s=None,
        timed_s=None,
    )
    Path(out).write_text(json.dumps(records.to_json(profile), indent=1) + "\n")


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:2]))
