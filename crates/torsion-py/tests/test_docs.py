"""help() documents the API: every public class, function, method and property of `torsion` has a runtime
docstring, and every parameter of a callable is named in its docstring (issue 21 item 6)."""
import inspect
import re

import pytest

import torsion
import torsion.models
import torsion.sysid

MODULES = {"torsion": torsion, "torsion.models": torsion.models, "torsion.sysid": torsion.sysid}
try:  # the PyTorch integration is documented too when torch is installed
    import torsion.autograd

    MODULES["torsion.autograd"] = torsion.autograd
except ImportError:
    pass


def _params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters if p not in ("self", "cls", "ctx", "$self", "$cls", "args", "kwargs")]


def members():
    """(qualified name, object, is_property) of every public callable and property."""
    for mname, mod in MODULES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            yield f"{mname}.{name}", obj, False
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                own = [a for a in vars(obj) if not a.startswith("_")]
                if issubclass(obj, str):  # ViewPage: only its own attributes
                    own = [a for a in own if a not in vars(str)]
                for a in own:
                    raw = vars(obj)[a]
                    is_prop = inspect.isgetsetdescriptor(raw) or isinstance(raw, property) \
                        or inspect.ismemberdescriptor(raw)
                    yield f"{mname}.{name}.{a}", getattr(obj, a), is_prop


ALL = sorted(members(), key=lambda m: m[0])


def test_the_walk_reaches_the_api():
    names = {n for n, _, _ in ALL}
    for expected in ["torsion.rollout", "torsion.NcpSolver", "torsion.LcpSolver", "torsion.Model.params_select",
                     "torsion.Model.nq", "torsion.XpbdSolver.initial_state", "torsion.models.load", "torsion.view",
                     "torsion.sysid.Problem.fit", "torsion.sysid.fit_ray", "torsion.sysid.Result.save",
                     "torsion.TensegritySolver", "torsion.ilqr", "torsion.rollout_tape", "torsion.RolloutTape.vjp",
                     "torsion.sysid.Shooting"]:
        assert expected in names, expected
    assert len(ALL) > 100


def undocumented():
    bad = []
    for name, obj, is_prop in ALL:
        doc = inspect.getdoc(obj) or ""
        if len(doc.strip()) < 10:
            bad.append(f"{name}: no docstring")
            continue
        if is_prop or not callable(obj):
            continue
        params = _params(obj)
        if params is None:
            if not inspect.isclass(obj):
                bad.append(f"{name}: no signature (text_signature)")
            continue
        sig = inspect.signature(obj)
        for p in params:
            if sig.parameters[p].default is Ellipsis:
                bad.append(f"{name}: parameter '{p}' shows no default in help() (text_signature)")
            if not re.search(rf"(?<![\w.]){re.escape(p)}(?!\w)", doc):
                bad.append(f"{name}: parameter '{p}' not named in its docstring")
    return bad


def test_every_public_callable_documents_itself():
    bad = undocumented()
    assert not bad, f"{len(bad)} undocumented:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", ["rollout", "rollout_vjp", "step_jacobians", "crba", "aba"])
def test_help_shows_shapes(name):
    doc = inspect.getdoc(getattr(torsion, name))
    assert re.search(r"\(\w+(, \w+)*,?\)", doc), doc  # a shape such as (T, control_dim) or (nv,)
