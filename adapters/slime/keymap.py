"""How slime's native figures map onto benchbed's canonical keys (the normalization table, kept as data).

Trainer step k (slime rollout_id k-1; benchbed numbers steps from 1) is one `log_perf_data` dict, which covers the
interval from the end of train block k-1 to the end of train block k (slime observability/train_metric_utils.py):

| benchbed key          | from slime timers (`perf/<timer>_time`)                                                  |
|-----------------------|------------------------------------------------------------------------------------------|
| trainer.step          | train_wait + train (= slime's perf/step_time; perf/total_train_time before slime #629)    |
| trainer.wait          | train_wait − (update_weights + save_model + sleep + wake_up + data_preprocess            |
|                       |   + ref_model_update of the previous step); clamped at 0 with a warning                  |
| trainer.compute       | actor_train + log_probs + ref_log_probs + teacher_log_probs (inside the train block)      |
| trainer.weight_sync   | update_weights                                                                           |
| trainer.checkpoint    | save_model                                                                               |
| trainer.other         | sleep + wake_up + data_preprocess + ref_model_update + (train − the compute timers)      |
| framework.trainer_idle_ratio | slime's perf/wait_time_ratio (= train_wait / step_time: counts offload, weight   |
|                       |   sync and checkpoint as waiting, so it is ≥ benchbed's trainer_idle_ratio)               |

The timers in the table run outside the train block but are reported in the dict of the step whose train_wait contains
them (sleep/save_model/update_weights of step k-1 are logged with step k), except ref_model_update, which runs after the
train block and before the dict is logged, so its time lies in the *next* step's train_wait.

Rollout side (RolloutManager `perf {rollout_id}` dict; rollout k is trained by step k+1):

| benchbed key          | from                                                                                     |
|-----------------------|------------------------------------------------------------------------------------------|
| groups.zero_adv       | Σ rollout/zero_std/count_* (kept groups whose rewards all agree)                          |
|                       |   + Σ rollout/dynamic_filter/drop_zero_std_* (groups dropped for it)                     |
| groups.finished       | kept groups (rollout_batch_size) + Σ rollout/dynamic_filter/drop_*                        |
| samples.finished      | groups.finished × n_samples_per_prompt                                                   |
| samples.accepted      | rollout_batch_size × n_samples_per_prompt (the kept batch)                                |
| samples.trained       | Σ train/global_batch_size of the step's optimizer steps, else samples.accepted            |
| native.<slime key>    | every other numeric perf/* and rollout/* figure, verbatim                                |
| native.partial_rollout/buffered | `Collected N partial samples into the data buffer` lines before `perf k`       |
| native.fully_async/*  | `fully-async rollout k: target= queue_warm=` / `done in Ns, queue_left=` lines           |
| generator.paused      | loop structure: sync = step minus trainer.wait; every mode = weight updates;              |
|                       |   one_step_off = from rollout k+1 done to the end of train step k                        |

Rollout dumps (`rollout_{k}.pt`, Sample.to_dict() per sample; trained by step k+1, so v_train = k):

| benchbed              | from                                                                                     |
|-----------------------|------------------------------------------------------------------------------------------|
| rollout v_start/v_end | first/last of weight_versions; slime counts pushes (initial push = 1), benchbed counts    |
|                       |   steps: version = (push − 1) × update_weights_interval (1 for train.py)                  |
| rollout status        | completed/truncated -> ok; aborted -> aborted; failed -> failed; remove_sample -> discarded |
| rollout t0/t1         | first/last timestamp of the sample's trace events (else a point with t0 = NaN)            |
| rollout attrs         | reward, slime_status, abort_reason, non_generation_time_s, resumed_from_rollout and       |
|                       |   env_staleness = k − metadata["start_rollout_id"] (partial rollouts)                    |
| rollout.group         | population std of the group's rewards (0 = zero advantage)                                |
| sandbox.*             | trace spans whose names mention boot/provision (start), exec/tool (exec), kill (stop)     |
| native.partial_rollout/* | resumed_samples and env_staleness_mean per step                                       |

Coding-agent console lines (examples/coding_agent_rl): `provision attempt N/M failed: <Exc>: <msg>` and
`<id> aborted: <reason>` -> sandbox.start failures (reasons in sandbox.py), `reward=... agent_exit_code=` -> ok.
"""

from __future__ import annotations

from benchbed import keys as K

# Timers measured outside the train block whose time lies inside the same dict's train_wait.
WAIT_CONTAINED: dict[str, str] = {
    "update_weights": K.TRAINER_WEIGHT_SYNC,
    "save_model": K.TRAINER_CHECKPOINT,
    "sleep": K.TRAINER_OTHER,
    "wake_up": K.TRAINER_OTHER,
    "data_preprocess": K.TRAINER_OTHER,
}
# Timed after the train block, before the dict is logged: its time lies in the next step's train_wait.
NEXT_STEP_WAIT_CONTAINED: dict[str, str] = {"ref_model_update": K.TRAINER_OTHER}
# Timers nested inside the `train` timer that are model computation.
COMPUTE_IN_TRAIN: tuple[str, ...] = ("actor_train", "log_probs", "ref_log_probs", "teacher_log_probs")
STEP_TIME_KEYS: tuple[str, ...] = ("perf/step_time", "perf/total_train_time")
WAIT_RATIO_KEY = "perf/wait_time_ratio"
FRAMEWORK_IDLE = "framework.trainer_idle_ratio"

# Keys that identify which process printed a `perf N:` dict.
TRAINER_PERF_MARKERS: tuple[str, ...] = ("perf/train_wait_time", "perf/train_time", "perf/actor_train_time")
ROLLOUT_PERF_MARKERS: tuple[str, ...] = ("perf/rollout_time", "rollout/response_len/mean")
TRAINER_ACTORS: tuple[str, ...] = ("MegatronTrainRayActor", "FSDPTrainRayActor", "TrainRayActor")
ROLLOUT_ACTORS: tuple[str, ...] = ("RolloutManager",)

ZERO_STD_PREFIX = "rollout/zero_std/count_"
DROP_PREFIX = "rollout/dynamic_filter/drop_"
DROP_ZERO_STD_PREFIX = "rollout/dynamic_filter/drop_zero_std"

# Console file:line of the `perf` log call at each pinned commit -> framework version (the metric code moved from
# slime/utils + slime/ray/rollout.py to slime/observability in #2298).
PERF_CALL_SITES: dict[tuple[str, int], str] = {
    ("rollout.py", 1306): "v0.3.1",
    ("train_metric_utils.py", 50): "v0.3.1",
    ("rollout_metrics.py", 268): "624b824",
    ("train_metric_utils.py", 401): "624b824",
}
# File names that only exist on one side of the move, for versions between or around the pins.
LAYOUT_BY_FILE: dict[str, str] = {
    "rollout.py": "slime/utils layout (<= v0.3.1-era)",
    "rollout_metrics.py": "slime/observability layout (>= 624b824)",
}
PINNED_COMMITS: dict[str, str] = {
    "v0.3.1": "a6272da0d4f3d0a08520c99a2f3b4f6c887960dc",
    "624b824": "624b824a898ab0ec1fcb4d373004c7f3852bf515",
}
