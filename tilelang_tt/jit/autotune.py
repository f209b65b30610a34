"""TileLang's ``@autotune`` without a tuner.

A call that gives every argument the configs tune runs that configuration, as TileLang does;
choosing among ``configs`` needs measured device time, so a call that leaves one open is a
TTUnsupportedError naming the arguments to pass.
"""

from __future__ import annotations

import functools
import inspect

from .._tilelang_modules import MODULES
from ..errors import TTUnsupportedError


def autotune(configs=None, warmup=25, rep=100, timeout=100, **_options):
    """Decorator: TileLang's signature; ``warmup``, ``rep``, ``timeout`` and the rest unused."""

    def decorate(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            cfgs = configs(*args, **kwargs) if callable(configs) else list(configs or [])
            tuned = set().union(*(dict(c).keys() for c in cfgs))
            given = set(sig.bind_partial(*args, **kwargs).arguments)
            missing = sorted(tuned - given)
            if missing:
                raise TTUnsupportedError(
                    f"tilelang.autotune of {getattr(fn, '__name__', 'the kernel')}: {MODULES['autotuner']}; "
                    f"pass {', '.join(missing)} to run one configuration")
            return fn(*args, **kwargs)

        return call

    return decorate
