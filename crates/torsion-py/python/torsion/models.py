"""Models by name: ``torsion.models.list()`` and ``torsion.models.load(name)``.

Names cover built-in models (``two_link_arm``, ``tensegrity_prism``, ``superball``, ``superball_air``,
``baxter_left_arm``), URDFs of pip ``example-robot-data`` (``panda``, ``baxter``, ``ur5``, ``go2``, ...) and the
dm_control suite's MJCF files (``dm_control/hopper``, ...; fetched once from the ``dm-control`` wheel on PyPI,
or read from ``$TORSION_DM_CONTROL_DIR``). The CLI takes the same names: ``torsion simulate --model panda``.
"""
from typing import Dict, List

from ._torsion import Model, _load_model, _model_names

__all__ = ["list", "load"]

_list = list


def list() -> List[Dict[str, str]]:  # noqa: A001 - the documented name
    """Every registered model as a dict with keys ``name``, ``description`` and ``source`` (``builtin``,
    ``example-robot-data:<relative URDF path>`` or ``dm_control:<file>``)."""
    return _list({"name": n, "description": d, "source": s} for (n, d, s) in _model_names())


def load(name: str) -> Model:
    """The model registered as ``name`` (see :func:`list`). ``dm_control/NAME`` also reaches suite files not
    listed. Raises ValueError for an unknown name (the message lists the known ones) or a missing package (the
    message names the pip package to install)."""
    if not isinstance(name, str):
        raise TypeError(f"models.load: expected a model name (str), got {type(name).__name__}")
    return _load_model(name)
