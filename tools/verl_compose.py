"""Compose a rendered override set under verl's own Hydra configuration (needs the `verl` extra).

Used by the tests and the fixture script to prove that every rendered plan is valid for real verl;
render and parse never import this module.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchbed.errors import AdapterError

# entry module -> (config directory relative to the verl package, default config name)
CONFIG_LOCATIONS: dict[str, tuple[str, str]] = {
    "verl.trainer.main_ppo": ("trainer/config", "ppo_trainer"),
    "verl.experimental.fully_async_policy.fully_async_main": (
        "experimental/fully_async_policy/config",
        "fully_async_ppo_trainer",
    ),
    "verl.experimental.one_step_off_policy.main_ppo": (
        "experimental/one_step_off_policy/config",
        "one_step_off_ppo_trainer",
    ),
}


def verl_package_dir() -> Path:
    """Directory of the installed verl package, without importing it."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise AdapterError("verl is not installed; install the extra: pip install 'benchbed[verl]'")
    return Path(next(iter(spec.submodule_search_locations)))


def split_argv(argv: Sequence[str]) -> tuple[str, str | None, list[str]]:
    """(entry module, --config-name or None, Hydra overrides) from a plan's argv."""
    args = list(argv)
    if "-m" not in args:
        raise AdapterError(f"argv {args[:4]}... does not run a module with -m; expected python3 -m verl....")
    i = args.index("-m")
    module, rest = args[i + 1], args[i + 2 :]
    config_name = None
    overrides = []
    for arg in rest:
        if arg.startswith("--config-name="):
            config_name = arg.split("=", 1)[1]
        else:
            overrides.append(arg)
    return module, config_name, overrides


def compose(module: str, overrides: Sequence[str], config_name: str | None = None) -> dict[str, Any]:
    """The resolved config verl would run with; raises AdapterError naming the bad override."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    if module not in CONFIG_LOCATIONS:
        raise AdapterError(f"unknown verl entry module {module!r}; expected one of {sorted(CONFIG_LOCATIONS)}")
    rel_dir, default_name = CONFIG_LOCATIONS[module]
    package = verl_package_dir()
    GlobalHydra.instance().clear()
    # No chdir: one_step_off and fully_async find ppo_trainer only through the plan's hydra.searchpath override,
    # exactly as they must when launched from the run directory.
    with initialize_config_dir(str(package / rel_dir), version_base=None):
        try:
            cfg = hydra_compose(config_name or default_name, overrides=list(overrides))
            resolved = OmegaConf.to_container(cfg, resolve=True)
        except Exception as exc:  # hydra and omegaconf raise many types; all mean "invalid override"
            raise AdapterError(f"verl {module} rejects the overrides: {type(exc).__name__}: {exc}") from exc
        finally:
            GlobalHydra.instance().clear()
    validate(cfg, module)
    return resolved  # type: ignore[return-value]


def validate(cfg: Any, module: str) -> None:
    """verl's own start-up checks (batch sizes vs GPUs, micro-batch settings), as main_ppo runs them."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    try:
        with warnings.catch_warnings():  # GRPO has no critic; verl says so on every call
            warnings.filterwarnings("ignore", message="Disabled critic", category=UserWarning)
            validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    except Exception as exc:  # verl raises AssertionError, ValueError, TypeError for bad settings
        raise AdapterError(f"verl {module} rejects the config: {type(exc).__name__}: {exc}") from exc


def compose_argv(argv: Sequence[str]) -> dict[str, Any]:
    """Compose the config that a LaunchPlan's argv would give verl."""
    module, config_name, overrides = split_argv(argv)
    return compose(module, overrides, config_name)
