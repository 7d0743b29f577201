"""A backend whose package is installed only in an environment of its own (as TileLang's pins
are): ``fake_env_dsl`` exists only in a folder the test names in ``DECODE_BENCH_ENV_OWN_ENV``.
Its kernel is the plugin backend's float32 torch one-pass, run through that package, so a PASS
proves the worker ran where the package is; the tests are in ``tests/test_plugin.py``."""

import importlib

from impls.registry import Backend, Capabilities, Impl, Launch
from tests import plugin_backend

BACKEND = Backend(name="plugin-own-env", summary="a backend whose package lives apart",
                  requires=("fake_env_dsl",), cpu_mode="torch", environment="own-env",
                  versions=lambda: {"fake_env_dsl": importlib.import_module("fake_env_dsl").__version__})


def prepare(inputs, out, lse) -> Launch:
    importlib.import_module("fake_env_dsl")  # only importable in the backend's environment
    return plugin_backend.prepare_one_pass(inputs, out, lse)


IMPLS = [Impl(BACKEND, "one-pass", "tests.plugin_own_env", Capabilities(frozenset({"dense"})),
              summary="the plugin backend's one pass, from its own environment")]
