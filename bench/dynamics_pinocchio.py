#!/usr/bin/env python3
"""Generalized-coordinate dynamics, torsion vs Pinocchio's C++, timed in one run (BENCHMARKS.md section
"Generalized-coordinate dynamics vs Pinocchio C++").

Algorithms: ABA, RNEA, CRBA, RNEA derivatives (dtau/dq, dtau/dv, M) and ABA derivatives (dqdd/dq, dqdd/dv,
M^-1), per call, single thread, on the 7-DoF Panda and the Baxter left arm.
  * Pinocchio: $TORSION_SHARED_BENCH/pinocchio/{export_models.py, build.sh, timings.cpp}, copied to
    target/bench/pinocchio (the shared folder is read-only) and built there against the pip package `pin`
    (needs `apt-get install -y libeigen3-dev`; the compile takes about 3 minutes). export_models.py lets
    Pinocchio's Python parse the example-robot-data URDF and reduce it to the arm (buildReducedModel locks every
    other joint at 0, so the hand / gripper is lumped into the last link); the C++ program rebuilds that model
    from text and times each algorithm as the median of 7 repeats of 100000 calls (25000 for the derivatives)
    over 200 random points.
  * torsion: crates/torsion-bench, binary `dynamics` (cargo build --release): the same URDFs with the same
    joints locked (turned into fixed joints, which the URDF loader merges into their parent), the `*_into`
    functions with preallocated outputs, median of --repeats repeats of --calls calls over 200 random points.
One change to timings.cpp (in the build copy, see PATCH below): the model it rebuilds has no joint limits, so
randomConfiguration() draws q = inf and the program as shipped times NaN arithmetic with an instant sincos; with
PIN_Q_RANGE set the patched program draws q in [-pi, pi] instead (the range of torsion's points). The table's
anchor is that run; the as-shipped figures are printed beside it.
Both sides run twice, interleaved (torsion, Pinocchio, Pinocchio as shipped; twice), pinned to CPU 0 when taskset
exists; each figure is the lower of the two medians of its side (all are kept in the JSON).
Same models: the script rebuilds Pinocchio's model from the exported text exactly as timings.cpp does (through
Pinocchio's Python bindings) and compares nv, the total mass and M(q) at one configuration with torsion's.

Usage:  python3 bench/dynamics_pinocchio.py [--repeats N] [--calls N] [--reuse-build] [--out results.json]
Env: TORSION_SHARED_BENCH (default: ../shared/bench relative to the repository root).
"""
import argparse
import datetime
import filecmp
import json
import os
import platform
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL_RATIO = 1.5
Q_RANGE = 3.141592653589793  # torsion's points: q uniform in [-pi, pi], v, a, tau in [-1, 1] (as Eigen's Random)
ALGOS = [('aba', 'ABA'), ('rnea', 'RNEA'), ('crba', 'CRBA'), ('rnea_derivatives', 'RNEA derivatives'),
         ('aba_derivatives', 'ABA derivatives')]
ROBOTS = [('panda7', 'Panda (7 DoF)'), ('baxter_left7', 'Baxter left arm (7 DoF)')]
SOURCES = ('build.sh', 'export_models.py', 'timings.cpp')


def die(msg):
    print(f'dynamics_pinocchio.py: {msg}', file=sys.stderr)
    sys.exit(2)


def taskset():
    return ['taskset', '-c', '0'] if shutil.which('taskset') else []


def run(cmd, cwd=ROOT, env=None, label=''):
    print(f'[{label}] $ {" ".join(cmd)}', file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        die(f'{label} failed (exit {p.returncode})')
    print(f'[{label}] done in {dt:.1f} s', file=sys.stderr, flush=True)
    return p.stdout, p.stderr


def machine():
    cpu = 'unknown'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass

    def out(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        except OSError:
            return 'n/a'
    try:
        import pinocchio
        pin_version = pinocchio.__version__
    except ImportError:
        pin_version = 'n/a'
    return dict(nproc=os.cpu_count(), cpu=cpu, os=platform.platform(), python=platform.python_version(),
                rustc=out(['rustc', '--version']), gxx=out(['g++', '-dumpfullversion']), pinocchio=pin_version,
                date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'))


def shared_pinocchio_dir():
    d = os.environ.get('TORSION_SHARED_BENCH') or os.path.join(ROOT, '..', 'shared', 'bench')
    d = os.path.join(os.path.abspath(d), 'pinocchio')
    missing = [f for f in SOURCES if not os.path.isfile(os.path.join(d, f))]
    if missing:
        die(f'{missing} not found in {d}; set TORSION_SHARED_BENCH to the folder holding pinocchio/ '
            f'(default: ../shared/bench relative to the repository root {ROOT})')
    return d


# The one change to the shared timings.cpp (made in the build copy): timings.cpp rebuilds the model with
# Model::addJoint without limits, so its joint limits are ±DBL_MAX and randomConfiguration() draws
# lower + (upper − lower) u = +inf for every joint: the program as shipped times every algorithm on q = inf,
# where sincos returns NaN at once and everything downstream is NaN. With PIN_Q_RANGE=a set, the patched
# program gives the model the limits [−a, a] first (a = π here, the range torsion's points are drawn from);
# without it, it behaves as shipped. Both variants are run and reported.
PATCH_ANCHOR = '  Data data(model);\n'
PATCH = (PATCH_ANCHOR +
         '  if (const char *r = std::getenv("PIN_Q_RANGE")) {  // torsion bench: finite limits (see dynamics_pinocchio.py)\n'
         '    const double a = std::atof(r);\n'
         '    model.lowerPositionLimit.setConstant(-a);\n'
         '    model.upperPositionLimit.setConstant(a);\n'
         '  }\n'
         '  std::fprintf(stderr, "first random q[0] = %g\\n", randomConfiguration(model)[0]);\n')


def build_pinocchio(src, reuse):
    """Copy the shared sources to target/bench/pinocchio (timings.cpp patched, see PATCH), export the reduced
    models and compile timings.cpp."""
    if not os.path.isdir('/usr/include/eigen3'):
        die('Eigen headers not found (/usr/include/eigen3): apt-get install -y libeigen3-dev')
    try:
        import pinocchio  # noqa: F401  (the pip package `pin` provides the headers and the library)
    except ImportError:
        die('Pinocchio not importable: pip install pin example-robot-data')
    build = os.path.join(ROOT, 'target', 'bench', 'pinocchio')
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(src, 'timings.cpp')) as f:
        cpp = f.read()
    if cpp.count(PATCH_ANCHOR) != 1:
        die(f'{src}/timings.cpp changed: cannot find the line {PATCH_ANCHOR.strip()!r} to patch after')
    cpp = '#include <cstdlib>\n' + cpp.replace(PATCH_ANCHOR, PATCH)
    exe = os.path.join(build, 'timings')
    same = (os.path.isfile(exe) and all(os.path.isfile(os.path.join(build, f)) for f in SOURCES)
            and filecmp.cmp(os.path.join(src, 'build.sh'), os.path.join(build, 'build.sh'), shallow=False)
            and open(os.path.join(build, 'timings.cpp')).read() == cpp)
    for f in ('build.sh', 'export_models.py'):
        shutil.copyfile(os.path.join(src, f), os.path.join(build, f))
    with open(os.path.join(build, 'timings.cpp'), 'w') as f:
        f.write(cpp)
    env = dict(os.environ, PYTHON=sys.executable)
    run([sys.executable, 'export_models.py'], cwd=build, env=env, label='pinocchio export')
    if reuse and same:
        print('[pinocchio build] reusing target/bench/pinocchio/timings (sources unchanged)', file=sys.stderr)
        compile_s = None
    else:
        t0 = time.perf_counter()
        run(['bash', 'build.sh'], cwd=build, env=env, label='pinocchio build')
        compile_s = time.perf_counter() - t0
    return build, exe, compile_s


def pinocchio_times(build, exe, q_range):
    """{robot: figures} of the C++ program; q_range None: as shipped (q = inf), else limits [−q_range, q_range]."""
    env = dict(os.environ)
    env.pop('PIN_Q_RANGE', None)
    if q_range is not None:
        env['PIN_Q_RANGE'] = repr(q_range)
    res = {}
    for name, _ in ROBOTS:
        label = f'pinocchio {name}' + ('' if q_range is None else f' q in [-{q_range:.4g}, {q_range:.4g}]')
        out, err = run(taskset() + [exe, os.path.join(build, name + '.txt')], cwd=build, env=env, label=label)
        res[name] = json.loads(out.strip().splitlines()[-1])
        res[name]['first_q0'] = float(err.split('first random q[0] =')[-1].split()[0])
    return res


def torsion_times(repeats, calls):
    exe = os.path.join(ROOT, 'target', 'release', 'dynamics')
    out, err = run(taskset() + [exe, '--repeats', str(repeats), '--calls', str(calls)], label='torsion')
    return json.loads(out)


def pinocchio_model_from_text(path):
    """The model exactly as timings.cpp rebuilds it from export_models.py's text, through the Python bindings."""
    import numpy as np
    import pinocchio as pin
    model = pin.Model()
    with open(path) as f:
        lines = f.read().split('\n')
    g = model.gravity
    g.linear = np.array([float(x) for x in lines[0].split()])
    model.gravity = g
    joints = {'JointModelRX': pin.JointModelRX, 'JointModelRY': pin.JointModelRY, 'JointModelRZ': pin.JointModelRZ}
    for line in lines[1:]:
        if not line.strip():
            continue
        t = line.split()
        typ, parent, x = t[0], int(t[1]), [float(v) for v in t[2:]]
        R, p, mass, lever, inertia, axis = (np.array(x[0:9]).reshape(3, 3), np.array(x[9:12]), x[12],
                                            np.array(x[13:16]), np.array(x[16:25]).reshape(3, 3), np.array(x[25:28]))
        jm = joints[typ]() if typ in joints else pin.JointModelRevoluteUnaligned(axis)
        jid = model.addJoint(parent, jm, pin.SE3(R, p), f'j{model.njoints}')
        model.appendBodyToJoint(jid, pin.Inertia(mass, lever, inertia), pin.SE3.Identity())
    return model


def check_models(build, ours):
    """nv, total mass and M(q_check) of torsion vs the model the C++ program times."""
    import numpy as np
    import pinocchio as pin
    checks = {}
    for name, _ in ROBOTS:
        o = ours[name]
        model = pinocchio_model_from_text(os.path.join(build, name + '.txt'))
        with open(os.path.join(build, name + '.json')) as f:
            names = [j['name'] for j in json.load(f)['joints']]
        perm = [names.index(n) for n in o['joint_names']]  # torsion index -> Pinocchio v index (1-DoF joints)
        P = np.zeros((model.nv, model.nv))
        for k, p in enumerate(perm):
            P[p, k] = 1.0
        q = P @ np.array(o['q_check'])
        data = model.createData()
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        M_ours = np.array(o['M_check'])
        err = float(np.max(np.abs(P.T @ M @ P - M_ours)) / np.max(np.abs(M)))
        mass = float(sum(I.mass for I in model.inertias))
        checks[name] = dict(nv=(o['nv'], model.nv), total_mass=(o['total_mass'], mass), M_rel_err=err)
        ok = o['nv'] == model.nv and abs(o['total_mass'] - mass) < 1e-9 * mass and err < 1e-10
        print(f'[check] {name}: nv {o["nv"]} / {model.nv}, total mass {o["total_mass"]:.6f} / {mass:.6f} kg, '
              f'max |M_torsion - M_pinocchio| / max |M| = {err:.1e} -> {"same model" if ok else "MISMATCH"}',
              file=sys.stderr)
        if not ok:
            die(f'{name}: torsion and Pinocchio do not time the same model: {checks[name]}')
    return checks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--repeats', type=int, default=15, help='torsion: repeats per figure (median)')
    ap.add_argument('--calls', type=int, default=100000, help='torsion: calls per repeat (derivatives: a quarter)')
    ap.add_argument('--reuse-build', action='store_true',
                    help='skip the Pinocchio compile if target/bench/pinocchio/timings exists and the sources match')
    ap.add_argument('--out', default=os.path.join(ROOT, 'target', 'bench', 'dynamics_pinocchio.json'))
    a = ap.parse_args()

    src = shared_pinocchio_dir()
    build, exe, compile_s = build_pinocchio(src, a.reuse_build)
    run(['cargo', 'build', '--release', '-q', '-p', 'torsion-bench', '--bin', 'dynamics'], label='torsion build')
    runs_ours, runs_pin, runs_pin_shipped = [], [], []
    for _ in range(2):
        runs_ours.append(torsion_times(a.repeats, a.calls))
        runs_pin.append(pinocchio_times(build, exe, Q_RANGE))
        runs_pin_shipped.append(pinocchio_times(build, exe, None))
    checks = check_models(build, runs_ours[0])

    rows, results = [], {}
    all_met = True
    for name, label in ROBOTS:
        for key, alabel in ALGOS:
            ours = [r[name]['times'][key + '_us'] for r in runs_ours]
            pins = [r[name][key + '_us'] for r in runs_pin]
            shipped = [r[name][key + '_us'] for r in runs_pin_shipped]
            t, p, ps = min(ours), min(pins), min(shipped)
            ratio = t / p
            met = ratio <= GOAL_RATIO
            all_met &= met
            results.setdefault(name, {})[key] = dict(
                torsion_us=t, pinocchio_us=p, ratio=ratio, goal_met=met, pinocchio_as_shipped_us=ps,
                ratio_vs_as_shipped=t / ps, torsion_runs_us=ours, pinocchio_runs_us=pins,
                pinocchio_as_shipped_runs_us=shipped)
            rows.append(f'| {label} | {alabel} | {t:.3f} | {p:.3f} | {ratio:.2f}× | {"met" if met else "NOT met"} '
                        f'| {ps:.3f} | {t / ps:.2f}× |')
    allocs = {name: runs_ours[0][name]['allocs_per_call'] for name, _ in ROBOTS}
    first_q = {name: dict(finite=runs_pin[0][name]['first_q0'], as_shipped=runs_pin_shipped[0][name]['first_q0'])
               for name, _ in ROBOTS}
    report = dict(machine=machine(), checks=checks, results=results, allocs_per_call=allocs,
                  pinocchio_first_random_q0=first_q,
                  settings=dict(repeats=a.repeats, calls=a.calls, pinocchio_compile_s=compile_s,
                                pinocchio_build=os.path.relpath(build, ROOT), goal_ratio=GOAL_RATIO,
                                pinocchio_q_range=Q_RANGE),
                  runs=dict(torsion=runs_ours, pinocchio=runs_pin, pinocchio_as_shipped=runs_pin_shipped))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, 'w') as f:
        json.dump(report, f, indent=1)

    m = report['machine']
    print(f'\nMachine: {m["cpu"]}, nproc {m["nproc"]}, {m["os"]}; {m["rustc"]}; g++ {m["gxx"]}; '
          f'Pinocchio {m["pinocchio"]}; {m["date"]}')
    print(f'Per call, median, 1 thread (each figure the lower median of two runs per side); goal: torsion <= '
          f'{GOAL_RATIO}x Pinocchio C++.\n')
    print(f'Pinocchio: q drawn in [-pi, pi] (first random q[0]: {first_q}); "as shipped": timings.cpp unchanged, '
          f'q = inf.\n')
    print('| robot | algorithm | torsion (µs) | Pinocchio C++ (µs) | torsion / Pinocchio | goal '
          '| Pinocchio as shipped, q = inf (µs) | torsion / as shipped |')
    print('|---|---|---|---|---|---|---|---|')
    print('\n'.join(rows))
    print(f'\nHeap allocations per call (torsion): {allocs}')
    print(f'All goals met: {all_met}. JSON: {os.path.relpath(a.out, ROOT)}')


if __name__ == '__main__':
    main()
