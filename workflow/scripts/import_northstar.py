"""Rule import_northstar: your own Northstar table (data.northstar.table), checked (columns, values, label
leakage) and written as the canonical .npy matrix and its metadata, like the generated one: its Parquet/CSV
export, load/convert timing, split and Data section are then all of your table."""

from accel_choice.io import atomic, dataio, envinfo, usertable
from accel_choice.io.runtime import job
from accel_choice.records.data import UserDataSource

p = snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    table = p.table
    dataset = usertable.load_user_table(table["path"], table["target"], table["features"])
    source = UserDataSource(
        kind="table",
        files=(table["path"],),
        sha256=(atomic.sha256_file(table["path"]),),
        rows=len(dataset.matrix),
        sample_shape=(len(dataset.feature_columns),),
        seed=p.seed,
    )
    meta = dataio.save_dataset(
        dataset, snakemake.output.npy, snakemake.output.meta, source, envinfo.quick_environment(p.seed)
    )
    log.info(
        "imported %s: %s rows × %s features, sha256 %s",
        table["path"],
        meta.rows,
        len(meta.feature_columns),
        source.sha256[0],
    )
