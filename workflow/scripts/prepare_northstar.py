"""Rule prepare_northstar: the seeded stratified split and train-only standardisation statistics.

The split does not depend on the batch sizes: each training job checks that its own batch size
fits the training split (train_northstar, seed_limits).
"""

import pyarrow as pa
import pyarrow.parquet as pq

from accel_choice import records
from accel_choice.io import atomic, dataio, envinfo
from accel_choice.analyze import selection
from accel_choice.io.runtime import job
from accel_choice.records.data import DatasetMeta, UserDataSource
from accel_choice.records.northstar import (
    FittedStandardizer,
    GeneratedSource,
    NorthstarPrepare,
    SplitRatios,
    SplitSummaries,
    SplitSummary,
    UserTableSource,
)

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    meta = records.read(DatasetMeta, inp.source[1])
    dataset = dataio.load_dataset(inp.source[0], meta)  # your table, imported and checked by import_northstar
    if p.user_table:
        path = p.user_table["path"]
        if not isinstance(meta.generator, UserDataSource) or meta.generator.files != (path,):
            raise ValueError(f"{inp.source[1]} was not imported from data.northstar.table {path}")
        source = UserTableSource(kind="user table", path=path, sha256=meta.generator.sha256[0])
        described = path
    else:
        source = GeneratedSource(kind="generated", matrix_sha256=meta.matrix_sha256)
        described = f"the generated table {inp.source[0]} (data.northstar.rows, data.northstar.late_rate)"
    labels = selection.stratified_split(dataset.target, p.ratios, p.seed)
    selection.check_split_classes(dataset.target, labels, described)
    standardizer = selection.Standardizer.fit(dataset.features[labels == "train"])
    columns = {name: pa.array(dataset.features[:, i]) for i, name in enumerate(dataset.feature_columns)}
    columns[dataset.target_column] = pa.array(dataset.target.astype("int8"))
    # A feature may be called "split": the labels then take a free name, recorded in prepare.json.
    split_column = selection.split_column_name(dataset.columns)
    columns[split_column] = pa.array(labels)
    with atomic.atomic_path(out.table) as tmp:
        pq.write_table(pa.table(columns), tmp)
    counts = {
        name: SplitSummary(rows=int((labels == name).sum()), positive_rate=float(dataset.target[labels == name].mean()))
        for name in selection.SPLITS
    }
    atomic.write_record(
        out.meta,
        NorthstarPrepare(
            feature_columns=tuple(dataset.feature_columns),
            target_column=dataset.target_column,
            split_column=split_column,
            source=source,
            ratios=SplitRatios(**p.ratios),
            seed=p.seed,
            splits=SplitSummaries(**counts),
            standardizer=FittedStandardizer(fitted_on="train", mean=standardizer.mean, std=standardizer.std),
            table_sha256=atomic.sha256_file(out.table),
            environment=envinfo.quick_environment(p.seed),
        ),
    )
    log.info("split %s", {name: summary.rows for name, summary in counts.items()})
