"""Run histories where their users keep them, behind one interface: `open_history(location) -> History`.

A location is a path or a URI:
- a W&B run: `wandb/offline-run-*` or `wandb/run-*` directory, its `run-*.wandb` file, or a `wandb/` folder
  holding one run (read on this machine); `wandb://ENTITY/PROJECT/RUN_ID` (the W&B cloud, `wandb.Api`);
- an MLflow run: a file store (`mlruns/`, or one run's folder in it), a SQLite store (`sqlite:///mlflow.db` or
  the `.db` file), or a tracking server (`http://HOST:PORT/#/experiments/E/runs/RUN_ID` as the MLflow UI shows it,
  `mlflow://HOST:PORT/RUN_ID`), through mlflow's own client; `#RUN_ID` picks the run in a store with several;
- TensorBoard event files (one file, or a folder of them);
- a JSON-Lines metrics file (`{"step": N, "data": {...}}` as verl's file logger writes, or flat `{"step": N, ...}`);
- a console log's `step:N - key:value - ...` lines (verl's `Tracking` console logger).
Modules: `history` (the History shape), `locate` (which source a location is), one module per source."""

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource
from benchbed.adapterkit.histories.locate import history_kind, open_history

__all__ = ["History", "HistoryError", "HistorySource", "history_kind", "open_history"]
