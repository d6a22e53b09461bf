"""MuJoCo as a black-box simulator for torsion's sampled iLQG (tensegrity-roll / tensegrity-3bar, spec 003 §4.5).

torsion-experiments starts it as `python3 -c <this file>` (the text is compiled into the binary, so no path is
needed) and talks over stdin / stdout, little-endian, every number 8 bytes:

  request  header: u64 xml_len, xml (UTF-8), f64[3] gravity, f64 settle_tol, u64 settle_max
  reply    header: u64 nq, nv, na, nu, u64 settle_steps (0: settle_max reached), f64 timestep,
                   f64[nq + nv + na] x0 = (qpos, qvel, act) settled from qpos0 under zero controls
  request  step:   u64 1, u64 nstep, f64[nq + nv + na] x, f64[nu] ctrl
  reply    step:   f64[nq + nv + na] the state after nstep mj_step calls with ctrl held (NaN where MuJoCo failed)
  request  quit:   u64 0

State: qpos, qvel (MuJoCo's: free joints' linear velocity in the world frame, angular in the body frame), act
(the filter actuators' activations, spec 003 §3.3). Every step request starts from the given state with the
solver's warm start cleared, so a step is a function of (x, ctrl) alone, the same for sampled and evaluated
rollouts.
"""
import os, struct, sys

import numpy as np
import mujoco


def read(n):
    b = sys.stdin.buffer.read(n)
    if len(b) != n:
        sys.exit(0)
    return b


def u64():
    return struct.unpack("<Q", read(8))[0]


def f64s(n):
    return np.frombuffer(read(8 * n), dtype="<f8").copy()


def main():
    # the protocol keeps the original stdout; anything else printed there (MuJoCo's C warnings) goes to stderr
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    xml = read(u64()).decode("utf-8")
    gravity, tol, smax = f64s(3), f64s(1)[0], u64()
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.gravity[:] = gravity
    d = mujoco.MjData(m)
    settled = 0
    for k in range(smax):
        mujoco.mj_step(m, d)
        if np.abs(d.qvel).max() < tol:
            settled = k + 1
            break
    out.write(struct.pack("<5Q", m.nq, m.nv, m.na, m.nu, settled))
    out.write(np.concatenate([[m.opt.timestep], d.qpos, d.qvel, d.act]).astype("<f8").tobytes())
    out.flush()
    nq, nv, na, nu = m.nq, m.nv, m.na, m.nu
    while u64() == 1:
        nstep = u64()
        x, ctrl = f64s(nq + nv + na), f64s(nu)
        d.qpos[:], d.qvel[:], d.act[:] = x[:nq], x[nq:nq + nv], x[nq + nv:]
        d.qacc_warmstart[:] = 0.0
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d, nstep)
        y = np.concatenate([d.qpos, d.qvel, d.act])
        if not np.all(np.isfinite(y)):
            y[:] = np.nan
        out.write(y.astype("<f8").tobytes())
        out.flush()


if __name__ == "__main__":
    main()
