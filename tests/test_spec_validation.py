"""No spec value that can only fail at launch passes validation (strict types, inf/NaN, seed range,
steps that cannot fit, warmup larger than the run), and random specs either validate or get one clear line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbed.errors import SpecError
from benchbed.sim import sim_params
from benchbed.spec import build_spec, load_spec

BASE = {"name": "t", "adapter": "sim", "workload": {"steps": 10, "prompts_per_step": 2, "group_size": 4}}


def spec_with(**tables) -> dict:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    for dotted, value in tables.items():
        node = data
        *parents, last = dotted.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return data


def refused(data: dict, *needles: str) -> str:
    with pytest.raises(SpecError) as info:
        sim_params(build_spec(data, "t.toml"))
    message = str(info.value)
    assert message.startswith("t.toml: ") and "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.parametrize(
    ("value", "needle"), [(True, "valid integer"), ("10", "valid integer"), (10.0, "valid integer")]
)
def test_steps_are_not_coerced(value, needle):
    refused(spec_with(workload__steps=value), "field 'workload.steps'", needle)


def test_set_override_of_a_bool_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "t"\nadapter = "sim"\n')
    with pytest.raises(SpecError, match=r"field 'workload.steps'.*got True"):
        load_spec(path, ["workload.steps=true"])
    with pytest.raises(SpecError, match=r"field 'workload.steps'.*got '10'"):
        load_spec(path, ['workload.steps="10"'])


@pytest.mark.parametrize(
    ("table", "value", "field"),
    [
        ("sim__latency", float("inf"), "sim.latency.mean"),
        ("sim__latency", {"dist": "lognormal", "mean": float("nan")}, "sim.latency.mean"),
        ("sim__weight_sync_time", float("inf"), "sim.weight_sync_time"),
        ("sim__train_step_time", float("inf"), "sim.train_step_time"),
        ("sim__latency", {"dist": "empirical", "values": [1.0, float("inf")]}, "sim.latency.values"),
        ("timeout_s", float("inf"), "timeout_s"),
    ],
)
def test_infinite_and_nan_times_are_refused(table, value, field):
    refused(spec_with(**{table: value}), f"field '{field}", "finite")


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_seed_out_of_range_is_refused(seed):
    refused(spec_with(sim__seed=seed), "field 'sim.seed'")


@pytest.mark.parametrize("steps", [10**9, 99999999999999999999])
def test_steps_that_cannot_fit_are_refused_saying_why(steps):
    message = refused(spec_with(workload__steps=steps))
    assert "workload.steps" in message
    assert ("keeps every event and slot in memory" in message) or ("less than or equal to 10000000" in message)


def test_memory_refusal_names_the_need():
    refused(
        spec_with(workload__steps=9_000_000, workload__group_size=64), "keeps every event and slot in memory", "GiB"
    )


def test_warmup_at_or_beyond_the_run_is_refused():
    refused(spec_with(warmup_steps=10), "warmup_steps (10) must be smaller than workload.steps (10)")
    assert build_spec(spec_with(workload__steps=1), "t.toml").warmup_steps == 1  # the default on a 1-step run


_scalar = st.one_of(
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "workload__steps",
                "workload__group_size",
                "workload__prompts_per_step",
                "workload__max_staleness",
                "warmup_steps",
                "sim__concurrency",
                "sim__latency",
                "sim__train_step_time",
                "sim__weight_sync_time",
                "sim__seed",
                "sim__pass_rate",
                "sim__mode",
                "timeout_s",
                "sim__nonsense",
            ]
        ),  # fmt: skip
        _scalar,
        max_size=4,
    )
)
def test_random_specs_validate_fully_or_fail_with_one_line(fields):
    """Any spec either passes every check that launch would make, or is refused with one line naming the file."""
    data = spec_with(**fields)
    try:
        params = sim_params(build_spec(data, "t.toml"))
    except SpecError as exc:
        assert str(exc).startswith("t.toml: ") and "\n" not in str(exc)
        return
    assert params.steps >= 1 and params.config.seed >= 0
    assert 0 < params.config.latency.mean < float("inf") and params.config.weight_sync_time < float("inf")
