# The timed model counted, not assumed (docs/own-model.md): what the formulas give for the textbook
# MLP, counted on any model - the decision's FLOP, memory bound and theory table read it.


rule profile_model:
    input:
        code=code("profile_model.py"),
        model_code=MODEL_CODE,
    output:
        json=results(paths.MODEL_PROFILE),
        csv=report(results(paths.MODEL_PROFILE_CSV), caption="../report/model_profile.rst", category="Decision"),
    log:
        results(paths.log("profile_model")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        model=MODEL,
        sample_shape=list(SAMPLE_SHAPE),  # one sample's: (features,), or your arrays' sample shape
        rows=config["data"]["benchmark"]["rows"],
        batch_sizes=config["timing"]["batch_sizes"],
        seed=config["seed"],
    script:
        "../scripts/profile_model.py"
