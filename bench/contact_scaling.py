"""Exact-cone contact vs MuJoCo as the number of bodies grows (issue 15 item 1; BENCHMARKS.md "Contact scaling").

Scenes (one MJCF each, loaded by both engines): a floor plane and N free boxes (0.2 m cubes, 1 kg, μ 0.5,
Δt 5 ms, gravity 9.81), N = 1, 5, 10, 20, 50, in two layouts:
  * grid:   boxes 0.5 m apart on a square grid, each its own contact island, released 2 cm above the floor;
  * stacks: columns of 5 boxes (N / 5 columns 0.5 m apart), each box released 1 mm above the one below.
Each scene is stepped from rest in two phases: "drop" (steps 0–100: falling, impacts, settling) and "rest"
(steps 100–300: everything in contact). Per-step time of a phase = wall time of one rollout call over the phase /
its steps (torsion: `torsion.rollout`, a Rust loop; MuJoCo: `mujoco.rollout.rollout`, a C loop), median of
`--repeats`; the two engines interleaved scene by scene. MuJoCo: elliptic cone, condim 3, Euler, one thread.
torsion: `NcpSolver()` defaults (exact Coulomb cone).
Also per scene: the growth slope of the rest-phase time vs N (log-log least squares over N), physical sanity
for both engines (deepest penetration of a box into the floor or the box below it, horizontal drift of the boxes
over the rest phase), and for torsion the cost of one contact step's `step_jacobians` (A, B) and of
`rollout_vjp` per step over the rest phase (beside MuJoCo's `mjd_transitionFD`, forward differences, per call).
Usage: python3 bench/contact_scaling.py [--repeats N] [--sizes 1,5,10,20,50] [--out target/bench/contact_scaling.json]
Needs the torsion Python package (pip install ./crates/torsion-py) and mujoco.
With `--torsion-bin target/release/contact_scaling` the torsion side is the Rust bench binary instead (the same
scenes and phases through `Solver::step`, no Python package needed), run per scene just before MuJoCo's with
`--compare`: "before" (`NcpOptions::direct` off: the ADMM passes with the residual stop, session 5) and "after"
(`NcpSolver` defaults: the direct active-set solve first) interleaved, and with `--baseline-bin` another build's
defaults (e.g. main's binary) as "baseline" right after,
with one rest step's `step_vjp` up to 10 boxes; penetration / drift are then MuJoCo's only. `--rounds K` (binary
mode) alternates the engines K times per scene and takes the medians over the rounds (shared machines have slow
spells that otherwise land on one engine's measurement), reporting each round's ratio too.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

try:
    import torsion
except ImportError:  # --torsion-bin needs no Python package
    torsion = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H = 0.1  # box half size, m
DT = 0.005
DROP, REST = 100, 200


def scene_xml(n, layout):
    bodies = []
    if layout == "grid":
        side = math.ceil(math.sqrt(n))
        for i in range(n):
            x, y = 0.5 * (i % side), 0.5 * (i // side)
            bodies.append((x, y, H + 0.02))
    else:
        cols = max(1, n // 5)
        for c in range(cols):
            for k in range(5):
                bodies.append((0.5 * c, 0.0, H + k * (2 * H + 0.001) + 0.001))
    body_xml = "\n".join(
        f'<body name="b{i}" pos="{x} {y} {z}"><freejoint/>'
        f'<geom type="box" size="{H} {H} {H}" mass="1" friction="0.5 0 0"/></body>'
        for i, (x, y, z) in enumerate(bodies)
    )
    return f"""<mujoco model="boxes_{layout}_{n}">
  <option timestep="{DT}" gravity="0 0 -9.81" cone="elliptic" integrator="Euler"/>
  <worldbody>
    <geom name="floor" type="plane" size="50 50 0.1" friction="0.5 0 0"/>
    {body_xml}
  </worldbody>
</mujoco>"""


def penetration_and_drift(qs, n, layout, nq_body=7):
    """qs: (T, 7 n) free-joint positions per step. Penetration: deepest overlap of a box with the floor
    (grid and the bottom of each stack) or with the box below it (stacks), from COM heights (boxes stay upright
    at rest, so the overlap is the gap deficit). Drift: horizontal displacement over the rows given."""
    z = qs[:, 2::nq_body][:, :n]
    xy = np.stack([qs[:, 0::nq_body][:, :n], qs[:, 1::nq_body][:, :n]], axis=-1)
    if layout == "grid":
        pen = np.max(H - z)
    else:
        cols = max(1, n // 5)
        zz = z[:, : cols * 5].reshape(len(z), cols, 5)
        gaps = np.concatenate([zz[:, :, :1] - H, np.diff(zz, axis=2) - 2 * H], axis=2)
        pen = np.max(-gaps)
    drift = np.max(np.linalg.norm(xy[-1] - xy[0], axis=-1))
    return float(max(pen, 0.0)), float(drift)


def time_call(f, repeats):
    f()
    v = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        v.append(time.perf_counter() - t)
    return statistics.median(v)


def run_torsion(xml, n, layout, repeats, grads):
    model = torsion.load_mjcf(xml)
    solver = torsion.NcpSolver()
    x0 = solver.initial_state(model)
    nu = solver.control_dim(model)
    u_drop, u_rest = np.zeros((DROP, nu)), np.zeros((REST, nu))
    xs_drop = torsion.rollout(model, solver, x0, u_drop, DT)
    xr = xs_drop[-1]
    xs_rest = torsion.rollout(model, solver, xr, u_rest, DT)
    t_drop = time_call(lambda: torsion.rollout(model, solver, x0, u_drop, DT), repeats) / DROP
    t_rest = time_call(lambda: torsion.rollout(model, solver, xr, u_rest, DT), repeats) / REST
    nq = model.nq
    pen, drift = penetration_and_drift(np.concatenate([xs_drop[:, :nq], xs_rest[1:, :nq]])[DROP:], n, layout)
    pen_all, _ = penetration_and_drift(np.concatenate([xs_drop[:, :nq], xs_rest[1:, :nq]]), n, layout)
    r = dict(drop_us=t_drop * 1e6, rest_us=t_rest * 1e6, penetration=pen_all, rest_penetration=pen, drift=drift)
    if grads:
        xm = xs_rest[REST // 2]
        r["step_jacobians_us"] = time_call(lambda: torsion.step_jacobians(model, solver, xm, u_rest[0], [], DT),
                                           max(3, repeats // 2)) * 1e6
        g = np.zeros_like(xs_rest)
        g[-1, :nq] = 1.0
        T = 10
        r["rollout_vjp_per_step_us"] = time_call(
            lambda: torsion.rollout_vjp(model, solver, xs_rest[: T + 1], u_rest[:T], g[: T + 1], param_names=[], dt=DT),
            max(3, repeats // 2)) * 1e6 / T
    return r


def run_mujoco(xml, n, layout, repeats, grads):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    ns = mujoco.mj_stateSize(m, spec)
    s0 = np.zeros((1, ns))
    mujoco.mj_getState(m, d, s0[0], spec)
    c_drop, c_rest = np.zeros((1, DROP, m.nu)), np.zeros((1, REST, m.nu))
    st_drop, _ = mj_rollout.rollout(m, d, s0, c_drop)
    sr = st_drop[:, -1, :].copy()
    st_rest, _ = mj_rollout.rollout(m, d, sr, c_rest)
    t_drop = time_call(lambda: mj_rollout.rollout(m, d, s0, c_drop), repeats) / DROP
    t_rest = time_call(lambda: mj_rollout.rollout(m, d, sr, c_rest), repeats) / REST
    # state rows: [time, qpos, qvel, ...]
    q_all = np.concatenate([s0[:, 1 : 1 + m.nq], st_drop[0, :, 1 : 1 + m.nq], st_rest[0, :, 1 : 1 + m.nq]])
    pen_all, _ = penetration_and_drift(q_all, n, layout)
    pen, drift = penetration_and_drift(q_all[DROP:], n, layout)
    r = dict(drop_us=t_drop * 1e6, rest_us=t_rest * 1e6, penetration=pen_all, rest_penetration=pen, drift=drift)
    if grads:
        mujoco.mj_setState(m, d, st_rest[0, REST // 2], spec)
        nx = 2 * m.nv
        A, B = np.zeros((nx, nx)), np.zeros((nx, m.nu))
        r["transitionFD_us"] = time_call(lambda: mujoco.mjd_transitionFD(m, d, 1e-6, False, A, B, None, None),
                                         max(3, repeats // 2)) * 1e6
    return r


def run_torsion_bin(binary, n, layout, repeats, compare=True):
    """The Rust bench binary on one scene, both configurations (`compare`; else "after" alone): {config: row}."""
    out = subprocess.run([binary, "--sizes", str(n), "--layouts", layout, "--repeats", str(repeats)]
                         + (["--compare"] if compare else []) + ["--vjp-max", "10" if compare else "0"],
                         check=True, capture_output=True, text=True).stdout
    return {r["config"]: r for r in json.loads(out)["contact_scaling"]}


def main_bin(args, sizes):
    rows = []
    for layout in ("grid", "stacks"):
        for n in sizes:
            if layout == "stacks" and n % 5:
                continue
            xml = scene_xml(n, layout)
            # `--rounds` K: the engines alternate K times (each round: the binary, the baseline, MuJoCo; each a
            # median of `--repeats`), the per-step times are the medians over the rounds (a slow spell of a shared
            # machine then hits both engines' rounds alike); counts, checksums and gradient timings from round 1
            per = []
            for k in range(args.rounds):
                ours = run_torsion_bin(args.torsion_bin, n, layout, args.repeats)
                if args.baseline_bin:
                    # another build's defaults (e.g. main's binary), run right after: its "after" row as "baseline"
                    ours["baseline"] = run_torsion_bin(args.baseline_bin, n, layout, args.repeats, False)["after"]
                per.append((ours, run_mujoco(xml, n, layout, args.repeats, n in (1, 10) and k == 0)))
            ours, ref = per[0]
            med = lambda xs: statistics.median(xs)
            for key in ("drop_us", "rest_us"):
                ref[key] = med([m[key] for _, m in per])
                for c in ours:
                    ours[c][key] = med([o[c][key] for o, _ in per])
            r = dict(layout=layout, n=n, torsion=ours, mujoco=ref, rounds=len(per))
            for c in ours:
                r[f"ratio_drop_{c}"] = ours[c]["drop_us"] / ref["drop_us"]
                r[f"ratio_rest_{c}"] = ours[c]["rest_us"] / ref["rest_us"]
                r[f"round_ratios_rest_{c}"] = [o[c]["rest_us"] / m["rest_us"] for o, m in per]
                r[f"round_ratios_drop_{c}"] = [o[c]["drop_us"] / m["drop_us"] for o, m in per]
            rows.append(r)
            b, a = ours["before"], ours["after"]
            print(f"{layout:6s} N={n:3d}  before {b['drop_us']:8.1f} / {b['rest_us']:8.1f}  after {a['drop_us']:8.1f} / "
                  f"{a['rest_us']:8.1f}  MuJoCo {ref['drop_us']:7.1f} / {ref['rest_us']:7.1f} µs (drop / rest)  ratio "
                  f"before {r['ratio_drop_before']:5.1f}× / {r['ratio_rest_before']:5.1f}×  after "
                  f"{r['ratio_drop_after']:5.1f}× / {r['ratio_rest_after']:5.1f}×  passes/step after "
                  f"{a['drop_passes_per_step']:.2f} / {a['rest_passes_per_step']:.2f}  direct/step after "
                  f"{a['drop_direct_per_step']:.2f} / {a['rest_direct_per_step']:.2f}  fallbacks {a['drop_fallbacks']} / "
                  f"{a['rest_fallbacks']}  checksum same: "
                  f"{a['final_checksum'] == b['final_checksum']}"
                  + (f"  step_vjp {b['step_vjp_us']:.0f} / {a['step_vjp_us']:.0f} µs" if "step_vjp_us" in a else "")
                  + (f"  MuJoCo transitionFD {ref['transitionFD_us']:.0f} µs" if "transitionFD_us" in ref else "")
                  + (f"  baseline {ours['baseline']['drop_us']:.1f} / {ours['baseline']['rest_us']:.1f} µs, ratio "
                     f"{r['ratio_drop_baseline']:.1f}× / {r['ratio_rest_baseline']:.1f}×, fallbacks "
                     f"{ours['baseline']['rest_fallbacks']}" if "baseline" in ours else "")
                  + (f"  rounds' after / MuJoCo rest {min(r['round_ratios_rest_after']):.1f}–"
                     f"{max(r['round_ratios_rest_after']):.1f}×, drop {min(r['round_ratios_drop_after']):.1f}–"
                     f"{max(r['round_ratios_drop_after']):.1f}×" if len(per) > 1 else ""),
                  flush=True)
    slopes = {}
    for layout in ("grid", "stacks"):
        rs = [r for r in rows if r["layout"] == layout]
        ns = [r["n"] for r in rs]
        slopes[layout] = {c: slope(ns, [r["torsion"][c]["rest_us"] for r in rs]) for c in rs[0]["torsion"]}
        slopes[layout]["mujoco"] = slope(ns, [r["mujoco"]["rest_us"] for r in rs])
        print(f"{layout}: rest-phase growth slope before {slopes[layout]['before']:.2f}, after "
              f"{slopes[layout]['after']:.2f}, MuJoCo {slopes[layout]['mujoco']:.2f}")
    return rows, slopes


def slope(ns, ts):
    x, y = np.log(np.array(ns, float)), np.log(np.array(ts, float))
    return float(np.polyfit(x, y, 1)[0]) if len(ns) > 1 else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sizes", default="1,5,10,20,50")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench", "contact_scaling.json"))
    ap.add_argument("--torsion-bin", default=None, help="the Rust bench binary (torsion-bench contact_scaling)")
    ap.add_argument("--rounds", type=int, default=1, help="with --torsion-bin: alternate the engines this many "
                    "times per scene, medians over the rounds")
    ap.add_argument("--baseline-bin", default=None, help="with --torsion-bin: another build of that binary (e.g. "
                    "main's), its defaults run per scene right after as \"baseline\"")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.torsion_bin:
        rows, slopes = main_bin(args, sizes)
        return write(args, rows, slopes)
    rows = []
    for layout in ("grid", "stacks"):
        for n in sizes:
            if layout == "stacks" and n % 5:
                continue
            xml = scene_xml(n, layout)
            grads = n in (1, 10)
            ours = run_torsion(xml, n, layout, args.repeats, grads)
            ref = run_mujoco(xml, n, layout, args.repeats, grads)
            rows.append(dict(layout=layout, n=n, torsion=ours, mujoco=ref,
                             ratio_drop=ours["drop_us"] / ref["drop_us"], ratio_rest=ours["rest_us"] / ref["rest_us"]))
            r = rows[-1]
            print(f"{layout:6s} N={n:3d}  torsion {ours['drop_us']:9.1f} / {ours['rest_us']:9.1f} µs  "
                  f"MuJoCo {ref['drop_us']:7.1f} / {ref['rest_us']:7.1f} µs  (drop / rest)  ratio "
                  f"{r['ratio_drop']:5.1f}× / {r['ratio_rest']:5.1f}×  penetration {ours['penetration']:.1e} vs "
                  f"{ref['penetration']:.1e} m  drift {ours['drift']:.1e} vs {ref['drift']:.1e} m"
                  + (f"  step_jacobians {ours['step_jacobians_us']:.0f} µs, rollout_vjp {ours['rollout_vjp_per_step_us']:.0f}"
                     f" µs/step, MuJoCo transitionFD {ref['transitionFD_us']:.0f} µs" if grads else ""),
                  flush=True)
    slopes = {}
    for layout in ("grid", "stacks"):
        rs = [r for r in rows if r["layout"] == layout]
        slopes[layout] = {eng: slope([r["n"] for r in rs], [r[eng]["rest_us"] for r in rs]) for eng in ("torsion", "mujoco")}
        print(f"{layout}: rest-phase growth slope torsion {slopes[layout]['torsion']:.2f}, "
              f"MuJoCo {slopes[layout]['mujoco']:.2f}")
    write(args, rows, slopes)


def write(args, rows, slopes):
    out = dict(rows=rows, slopes=slopes, dt=DT, phases=dict(drop=DROP, rest=REST), repeats=args.repeats,
               rounds=getattr(args, "rounds", 1),
               machine=dict(cpu=platform.processor() or platform.machine(), nproc=os.cpu_count(),
                            python=sys.version.split()[0], mujoco=mujoco.__version__, load=os.getloadavg()))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
