"""The adapter kit: the chores every framework adapter shares, one module per chore.

- `adapter`: `FrameworkAdapter`, the adapter class declared as data; render/parse/find_runs delegate, lazily;
  `HistoryAdapter`, the same with the file layout of a history-based adapter as its defaults.
- `templates`: launch configs and flag tables kept as data files, filled from a spec's named values.
- `lines`: tolerant JSON-Lines and text reading; every skipped line is named by file and line number.
- `artifacts`: walk a run directory once and sort its files into the kinds an adapter asks for.
- `groups`: per-group reward statistics with one NaN policy.
- `breakdown`: the rest of a trainer step, with one tolerance rule and one warning naming the steps.
- `rows`: fast bulk appends of event rows through `TraceBuilder`.
- `handoff`: the one file (name and schema) that render leaves for parse.
- `presets`: model presets (per-model launch shapes) in one TOML format, with one loader and one matching rule.
- `upstream`: snapshots of what a framework accepts at a pinned commit (`upstream.json`, one format; tools/upstream.py).
- `keymaps`: key maps as data (native key, canonical key, unit, first/last release), one loader for every framework.
- `detection`: `Detected`, the release and trainer mode a parser found in a run, with the evidence for each.
- `histories`: tracker histories (W&B, MLflow, TensorBoard, metrics JSONL) read into one frame.
- `history_trace`: a history -> the canonical trace through a key map, the whole parse of a history-based adapter.
- `gpu`: GPU samples (tracker system metrics, benchbed's NVML sampler) -> the trace's `gpu.*` points, by step.
- `shared`: the library's helpers a plug-in uses (run discovery, log cleaning, redaction, sandbox failure reasons and
  spans, live figures), so that a plug-in imports benchbed only through benchbed.api and the kit.
"""
