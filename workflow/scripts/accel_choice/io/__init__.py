"""Input and output: atomic writes, tables, data files, the environment record, the job runtime, the configuration checks, the manifest and provenance of the lab report, reading a results folder."""
