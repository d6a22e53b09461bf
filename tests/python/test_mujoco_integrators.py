"""torsion's Featherstone integrators against MuJoCo's mj_step with the same integrator (issue 20 item 3):
RK4 on dm_control's cartpole, acrobot and pendulum (they ask for RK4), cheetah, a loose spinning box (free joint)
and a ball-jointed pendulum; implicitfast on the damped cheetah and walker and on the servo model of
test_mujoco_actuators.py (position / velocity servos: their kv enters M − h ∂τ/∂q̇), Euler on the servos for
contrast. Actuators on with random controls, contacts / limits / frictionloss / equality off (as
test_mujoco_actuators.py), 200 steps, max |qpos difference| ≤ 1e-9."""
import os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mujoco import suite_dir  # noqa: E402
from test_mujoco_actuators import SERVOS, run_path  # noqa: E402

TOL = 1e-9

LOOSE = """<mujoco model="loose"><option timestep="0.005" gravity="0 0 -9.81"/><worldbody>
  <body name="b" pos="0 0 1"><freejoint/>
    <geom type="box" size="0.2 0.1 0.05" pos="0.03 -0.02 0.01" mass="1.5"/>
    <geom type="sphere" size="0.05" pos="-0.1 0.05 0" mass="0.4"/></body></worldbody></mujoco>"""

BALL = """<mujoco model="ball"><option timestep="0.005" gravity="0 0 -9.81"/><worldbody>
  <body name="a"><joint type="ball" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.3 0.1 -0.4" size="0.05" mass="1"/>
    <body pos="0.3 0.1 -0.4"><joint axis="0 1 0"/><geom type="box" size="0.1 0.05 0.02" mass="0.5"/></body>
  </body></worldbody></mujoco>"""


def main():
    tmp = tempfile.mkdtemp()
    files = {}
    for name, xml in [("servos", SERVOS), ("loose", LOOSE), ("ball", BALL)]:
        files[name] = os.path.join(tmp, name + ".xml")
        open(files[name], "w").write(xml)
    suite = lambda n: os.path.join(suite_dir(), n + ".xml")  # noqa: E731
    cases = [("RK4", n, suite(n)) for n in ["cartpole", "acrobot", "pendulum", "cheetah"]]
    cases += [("RK4", "loose spinning box (free joint)", files["loose"]), ("RK4", "ball pendulum", files["ball"])]
    cases += [("implicitfast", n, suite(n)) for n in ["cheetah", "walker"]]
    cases += [("implicitfast", "servos (position, velocity, forcerange, filter)", files["servos"])]
    cases += [("RK4", "servos", files["servos"]), ("Euler", "servos", files["servos"])]
    bad = False
    for integrator, name, path in cases:
        err, moved, nu, outside = run_path(path, integrator=integrator)
        print(f"{integrator} {name}: {nu} actuators ({outside:.0%} of controls outside ctrlrange), 200 steps vs "
              f"mj_step: max |Δqpos| = {err:.1e} (the state moved by {moved:.2f})")
        bad |= not err <= TOL
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
