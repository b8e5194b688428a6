"""Follow a run while it runs (`benchbed watch`): tail its files, keep live figures and alarms, export them.

The live figures are running sums fed only the new bytes of each update; the final figures are the pipeline's own
(`benchbed.pipeline.ingest`), so they equal what `benchbed ingest` computes from the finished run."""
